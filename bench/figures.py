"""What the Python benchmarks share: percentiles and the row that prints a figure beside its
yardstick from the same run (bench/README.md)."""


def pct(values, p):
    """The p-th percentile (0..100) of `values`, nearest rank."""
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def row(name, ours, yard, yard_name, name_width=34, yard_width=22):
    """Prints p50 and p99 of `ours` and of the yardstick `yard` (milliseconds) and the ratio of
    the p50s, ours / yardstick."""
    o50, y50 = pct(ours, 50), pct(yard, 50)
    print("%-*s p50 %8.1f ms  p99 %8.1f ms | %-*s p50 %8.1f ms  p99 %8.1f ms | ratio %.2fx"
          % (name_width, name, o50, pct(ours, 99), yard_width, yard_name, y50, pct(yard, 99),
             o50 / y50), flush=True)
