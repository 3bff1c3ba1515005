#!/usr/bin/env python3
"""Asks a running Prometheus (its HTTP API) about Strata's dashboard and alerts.

  prom_check.py URL dashboard FILE.json   every panel expression, with $rank as
      ".*" and $__rate_interval as 5m, parses and returns series; prints those
      that do not and exits 1
  prom_check.py URL rules COUNT           COUNT alerting rules are loaded, each
      evaluates without error, and every metric each one reads returns series
  prom_check.py URL firing ALERT [LABEL=VALUE...]   exits 0 when ALERT (with
      those labels) is firing, 1 when not
  prom_check.py URL targets-up COUNT      exits 0 when COUNT targets are up
  prom_check.py URL query EXPR            exits 0 when EXPR returns series now

tests/process/prometheus_test.sh uses it; it never waits: the caller polls
it with a bound.
"""
import json
import re
import sys
import urllib.parse
import urllib.request

# Longer than a test run, so every rate covers all of it.
RATE_WINDOW = "5m"


def api(url, path, **params):
    query = urllib.parse.urlencode(params)
    with urllib.request.urlopen(f"{url}/api/v1/{path}?{query}", timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{path}: {body}")
    return body["data"]


def series(url, expr):
    """Number of series `expr` returns now; an error (a parse error) raises."""
    return len(api(url, "query", query=expr)["result"])


def dashboard_exprs(path):
    with open(path) as f:
        dash = json.load(f)
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"].replace("$rank", ".*").replace("$__rate_interval", RATE_WINDOW)
            yield panel["title"], expr


def check_dashboard(url, path):
    missing = []
    for title, expr in dashboard_exprs(path):
        try:
            n = series(url, expr)
        except Exception as e:  # a parse error is a failure too
            missing.append(f"{title}: {expr}: {e}")
            continue
        if n == 0:
            missing.append(f"{title}: {expr}: no series")
    for m in missing:
        print(m)
    return 1 if missing else 0


# Metric names an expression reads: identifiers followed by a selector, a range
# or a closing parenthesis; functions and keywords are followed by "(".
METRIC = re.compile(r"\b(strata_[a-z_]+|up)\b(?!\s*\()")


def check_rules(url, count):
    rules = [r for g in api(url, "rules")["groups"] for r in g["rules"] if r["type"] == "alerting"]
    problems = []
    if len(rules) != count:
        problems.append(f"{len(rules)} alerting rules loaded, expected {count}")
    for r in rules:
        if r["health"] != "ok":
            problems.append(f"{r['name']}: health {r['health']}: {r.get('lastError')}")
        for name in sorted(set(METRIC.findall(r["query"]))):
            if series(url, name) == 0:
                problems.append(f"{r['name']}: {name} returns no series")
    for p in problems:
        print(p)
    return 1 if problems else 0


def firing(url, name, labels):
    want = dict(kv.split("=", 1) for kv in labels)
    for a in api(url, "alerts")["alerts"]:
        l = a["labels"]
        if l.get("alertname") == name and a["state"] == "firing" and all(
                l.get(k) == v for k, v in want.items()):
            return 0
    return 1


def main(argv):
    url, what = argv[1], argv[2]
    if what == "dashboard":
        return check_dashboard(url, argv[3])
    if what == "rules":
        return check_rules(url, int(argv[3]))
    if what == "firing":
        return firing(url, argv[3], argv[4:])
    if what == "targets-up":
        return 0 if series(url, "up == 1") == int(argv[3]) else 1
    if what == "query":
        return 0 if series(url, argv[3]) > 0 else 1
    print(f"prom_check: unknown check {what}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
