"""Files: the atomic writers (atomic.py), the output policy every command declares to (policy.py) and
the UTF-8 reading of a user's text file with one message for an undecodable byte (text.py).

Every writer in megazoo goes through here: checkpoints, data caches, tokenizer files, model folders,
task outputs. See the three modules for the guarantees.
"""

from megazoo.core.fs.atomic import (SCRATCH_MARKER, atomic_file, atomic_folder, fsync_path, inside,
                                    pid_alive, scratch_folder, sweep_stale, write_bytes_atomic, write_json_atomic,
                                    write_text_atomic)
from megazoo.core.fs.policy import (Declared, OutputRefused, PathRole, check_paths, declared, enforce, input_arg,
                                    output_arg, resolve)
from megazoo.core.fs.text import NotUtf8, decode_utf8, read_utf8, utf8_lines

__all__ = ["SCRATCH_MARKER", "atomic_file", "atomic_folder", "fsync_path", "inside", "pid_alive",
           "scratch_folder", "sweep_stale", "write_bytes_atomic", "write_json_atomic", "write_text_atomic",
           "Declared", "OutputRefused", "PathRole", "check_paths", "declared", "enforce", "input_arg", "output_arg",
           "resolve", "NotUtf8", "decode_utf8", "read_utf8", "utf8_lines"]
