"""The chat command driven through a pseudo-terminal, as a person uses it: a banner, a reply per typed
line, the history in the next prompt (you are A, the model B), the document set's retrieved sentence
in front, /reset forgetting, /quit ending with code 0; a missing document folder is one error line."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import pytest

from megazoo.core.data.tokenizers import _gpt2_dir
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.gather import full_state
from megazoo.zoo.gpt import GPTModel, llama_layout
from megazoo.zoo.io import save_model

MAIN = "from megazoo.cli import main; raise SystemExit(main())"


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    cfg = llama_layout(num_layers=2, hidden_size=32, num_heads=4, num_kv_heads=2, ffn_hidden_size=64,
                       vocab_size=50257, seq_length=512)
    out = tmp_path_factory.mktemp("chat") / "ckpt"
    save_model(out, "llama", cfg, full_state(GPTModel(cfg).initialize(0), ParallelContext.single()),
               tokenizer=_gpt2_dir())
    return out


class Terminal:
    """A command on a pseudo-terminal: type lines, read until a text shows up."""

    def __init__(self, args):
        master, slave = pty.openpty()
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, "-c", MAIN, *args], stdin=slave, stdout=slave, stderr=slave,
                                     env=env, close_fds=True)
        os.close(slave)
        self.master, self.seen = master, ""

    def until(self, text: str, timeout: float = 120.0) -> str:
        end = time.monotonic() + timeout
        while text not in self.seen:
            left = end - time.monotonic()
            assert left > 0, f"no {text!r} on the terminal; it shows:\n{self.seen}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096).decode(errors="replace")
                except OSError:  # the command ended and closed the terminal
                    chunk = ""
                if not chunk:
                    break
                self.seen += chunk.replace("\r\n", "\n")
        assert text in self.seen, f"no {text!r} on the terminal; it shows:\n{self.seen}"
        head, _, self.seen = self.seen.partition(text)
        return head

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> int:
        code = self.proc.wait(timeout=60)
        os.close(self.master)
        return code


def test_chat_through_a_terminal(ckpt, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "penguin.txt").write_text("A penguin is a kind of seabird.\nPenguins cannot fly.\n")
    (docs / "violin.txt").write_text("A violin has four strings.\n")
    term = Terminal(["task", "dialogue", "chat", str(ckpt), "--knowledge", str(docs), "--sentences", "1",
                     "--max-new-tokens", "4", "--show-prompt"])
    assert "grounded in 3 sentences" in term.until("you> ")
    term.type("What kind of bird is a penguin?")
    prompt = term.until("[/prompt]")
    assert prompt.split("[prompt]\n")[1].strip() == ("Knowledge: A penguin is a kind of seabird.\n"
                                                     "Conversation:\nA: What kind of bird is a penguin?\nB:")
    first = term.until("you> ").split("model> ")[1].strip()
    term.type("How many strings does a violin have?")
    prompt = term.until("[/prompt]").split("[prompt]\n")[1].strip()
    assert prompt == ("Knowledge: A violin has four strings.\nConversation:\nA: What kind of bird is a penguin?\n"
                      f"B: {first}\nA: How many strings does a violin have?\nB:")
    term.until("you> ")
    term.type("/reset")
    term.until("(conversation forgotten)")
    term.type("violin")
    prompt = term.until("[/prompt]").split("[prompt]\n")[1].strip()
    assert prompt == "Knowledge: A violin has four strings.\nConversation:\nA: violin\nB:"
    term.until("you> ")
    term.type("/quit")
    assert term.close() == 0


def test_chat_with_a_missing_document_folder(ckpt, tmp_path):
    term = Terminal(["task", "dialogue", "chat", str(ckpt), "--knowledge", str(tmp_path / "nope")])
    out = term.until("expected a document set")
    assert term.close() == 2
    assert out.strip().startswith("megazoo task dialogue chat: error:") and "Traceback" not in out
