"""`python -m megazoo ...` and `torchrun -m megazoo ...` run the command line."""

from megazoo.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
