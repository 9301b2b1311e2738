"""python3 -m wordstats FILE... : prints a JSON summary of each file."""

import argparse
import json
import sys

from wordstats.core import summarize

STOPWORDS = frozenset("a an and are as at be by for from in is it of on or that the to was "
                      "were with".split())


def main(argv=None):
    p = argparse.ArgumentParser(prog="wordstats", description=__doc__)
    p.add_argument("files", nargs="+")
    p.add_argument("-n", type=int, default=5, help="how many top words")
    p.add_argument("--keep-stopwords", action="store_true")
    args = p.parse_args(argv)
    result = {}
    for name in args.files:
        with open(name, encoding="utf-8") as f:
            text = f.read()
        stop = frozenset() if args.keep_stopwords else STOPWORDS
        result[name] = summarize(text, args.n, stop).as_dict()
    json.dump(result, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
