"""Files: the atomic writers (atomic.py), the output policy every command declares to (policy.py), the
UTF-8 reading of a user's text file with one message for an undecodable byte (text.py) and the user
cache of files megazoo can make again (cache.py).

Every writer in megazoo goes through here: checkpoints, data caches, tokenizer files, model folders,
task outputs. See the four modules for the guarantees.
"""

from megazoo.core.fs.atomic import (SCRATCH_MARKER, atomic_file, atomic_folder, fsync_path, inside,
                                    pid_alive, resumable_folder, scratch_folder, sweep_stale, write_bytes_atomic,
                                    write_json_atomic, write_text_atomic)
from megazoo.core.fs.cache import cache_root, cached_folder
from megazoo.core.fs.policy import (Declared, OutputRefused, PathRole, check_paths, declared, enforce, input_arg,
                                    output_arg, resolve)
from megazoo.core.fs.text import NotUtf8, decode_utf8, read_utf8, utf8_lines

__all__ = ["SCRATCH_MARKER", "atomic_file", "atomic_folder", "fsync_path", "inside", "pid_alive",
           "resumable_folder", "scratch_folder", "sweep_stale", "write_bytes_atomic", "write_json_atomic",
           "write_text_atomic", "cache_root", "cached_folder", "Declared", "OutputRefused", "PathRole", "check_paths",
           "declared", "enforce", "input_arg", "output_arg", "resolve", "NotUtf8", "decode_utf8", "read_utf8",
           "utf8_lines"]
