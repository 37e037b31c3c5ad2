"""``python -m dg info|tune [options]``: the wheel's ``dg-info`` and ``dg-tune`` commands where the
entry points are not installed (a source tree on PYTHONPATH). ``python -m dg._info`` would run the
module a second time beside the copy ``import dg`` already made (runpy warns about it)."""

from __future__ import annotations

import sys
from typing import List, Optional

from . import _info, _tune

COMMANDS = {"info": _info.main, "tune": _tune.main}
USAGE = "usage: python -m dg {info,tune} [options]   (dg-info / dg-tune; --help after either)\n"


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0
    if not args or args[0] not in COMMANDS:
        sys.stderr.write(USAGE + ("python -m dg: unknown command %r\n" % args[0] if args else ""))
        return 2
    return COMMANDS[args[0]](args[1:])


if __name__ == "__main__":
    sys.exit(main())
