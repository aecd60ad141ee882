"""Driven by test/client/python.test.ts: exercises clients/python/return_address.py against the live
service whose base URL is argv[1]. Any failed assert exits non-zero with a traceback. The test runs
it with a virtualenv's python where the package is pip-installed; RETURN_ADDRESS_PY_FROM_SOURCE=1
makes it import the source folder instead."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

if os.environ.get("RETURN_ADDRESS_PY_FROM_SOURCE") == "1":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from return_address import ReturnAddress, ReturnAddressError, event_matches, parse_match  # noqa: E402

url = sys.argv[1]
# The file that runs as a script: the installed package's return_address.py, or the source file.
module = getattr(sys.modules.get("return_address.return_address"), "__file__", None) or sys.modules["return_address"].__file__

ra = ReturnAddress.create(url, name="py", task_id="t-py", ttl=3600)
assert ra.id.startswith("addr_") and ra.email.endswith("@" + ra.email.split("@")[1])
assert ra.get()["name"] == "py" and ra.get()["taskId"] == "t-py"
d = ra.deliver("a", {"n": 1}, idempotency_key="k")
assert d["duplicate"] is False and d["event"]["sequence"] == 1
assert ra.deliver("a", {"n": 1}, idempotency_key="k")["duplicate"] is True
ra.deliver("mail", {"from": {"address": "noreply@github.com"}, "to": ["x@y.z"]})
assert [e["sequence"] for e in ra.events(limit=1)] == [1, 2]

e = ra.wait_for(type="mail", match={"data.from.address": "noreply@github.com", "data.to": "x@y.z"}, timeout=5)
assert e and e["sequence"] == 2 and ra.cursor == 2, e
assert ra.wait_for(timeout=0) is None and ra.cursor == 2

# Woken by a delivery during the wait; passes over a non-matching one first.
def later():
    time.sleep(0.4)
    ra.deliver("pr", {"state": "open"})
    ra.deliver("pr", {"state": "merged", "n": 3})
threading.Thread(target=later).start()
e = ra.wait_for(type="pr", match=parse_match(["data.state=merged", "data.n=3"]), timeout=20)
assert e and e["sequence"] == 4, e
assert ra.ack(e["id"])["event"]["acknowledged_at"], "ack returns {event} as HTTP does"

assert event_matches({"type": "t", "data": {"ok": True, "v": None}}, "t", {"data.ok": "true", "data.v": "null"})
assert not event_matches({"type": "t", "data": {}}, None, {"data.missing": "None"})

# Typed errors: HTTP ones carry the API's status and code; no answer at all is network_error, status 0.
try:
    ra.ack("evt_nope")
    raise AssertionError("ack of an unknown event succeeded")
except ReturnAddressError as err:
    assert (err.status, err.code) == (404, "not_found"), err
try:
    ReturnAddress.create(url, ttl=1)
    raise AssertionError("ttl=1 accepted")
except ReturnAddressError as err:
    assert err.status == 400 and err.code == "invalid_request" and "expires_in_seconds" in err.message, err
s = socket.socket()
s.bind(("127.0.0.1", 0))
dead = "http://127.0.0.1:%d" % s.getsockname()[1]
s.close()
try:
    ReturnAddress(ra.id, ra.token, dead).wait_for(timeout=1)
    raise AssertionError("unreachable service gave no error")
except ReturnAddressError as err:
    assert (err.status, err.code) == (0, "network_error"), err

# The CLI: create --save (0600, response + cursor + url, no credential on stdout), a fresh
# environment using only the saved file, a filtered wait that does not move the cursor, --ack.
env = dict(os.environ, RETURN_ADDRESS_URL=url)
fresh = {k: v for k, v in os.environ.items() if k != "RETURN_ADDRESS_URL"}
path = os.path.join(tempfile.mkdtemp(), "a.json")
r = subprocess.run([sys.executable, module, "create", "--save", path], env=env, capture_output=True, text=True)
assert r.returncode == 0, r.stderr
assert os.stat(path).st_mode & 0o777 == 0o600
assert "aa_read_" not in r.stdout and "aa_ingress_" not in r.stdout, r.stdout
saved = json.load(open(path))
assert saved["url"] == url and saved["cursor"] == 0 and json.loads(r.stdout)["address"] == saved["address"]
r = subprocess.run([sys.executable, module, "deliver", "--save", path, "--type", "y", "--data", '{"n":1}'], env=fresh, capture_output=True, text=True)
assert r.returncode == 0, r.stderr
r = subprocess.run([sys.executable, module, "deliver", "--save", path, "--type", "x", "--data", '{"code":"123456","ok":true}'], env=fresh, capture_output=True, text=True)
assert r.returncode == 0, r.stderr
r = subprocess.run([sys.executable, module, "wait", "--save", path, "--type", "x", "--match", "data.ok=true", "--ack", "--timeout", "5"], env=fresh, capture_output=True, text=True)
assert r.returncode == 0 and json.loads(r.stdout)["acknowledged_at"], r.stderr
assert json.load(open(path))["cursor"] == 0, "a filtered wait never moves the saved cursor"
r = subprocess.run([sys.executable, module, "wait", "--save", path, "--type", "x", "--ack", "--timeout", "1"], env=fresh, capture_output=True, text=True)
assert r.returncode == 2 and r.stdout == "", ("wait --ack in a loop does not return the acknowledged event again", r.returncode, r.stdout)
r = subprocess.run([sys.executable, module, "events", "--save", path], env=fresh, capture_output=True, text=True)
assert [e["sequence"] for e in json.loads(r.stdout)["events"]] == [1, 2] and json.load(open(path))["cursor"] == 0, r.stderr
r = subprocess.run([sys.executable, module, "events", "--save", path, "--advance", "--type", "y"], env=fresh, capture_output=True, text=True)
assert json.loads(r.stdout)["next_cursor"] == 2 and json.load(open(path))["cursor"] == 2, r.stderr
r = subprocess.run([sys.executable, module, "wait", "--save", path, "--timeout", "1"], env=fresh, capture_output=True, text=True)
assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout)

# save()/load() use the CLI's file; consume(handler) is at-least-once and in order.
loaded = ReturnAddress.load(path)
assert (loaded.id, loaded.url, loaded.cursor) == (saved["address"]["id"], url, 2)
for i in range(3, 8):
    loaded.deliver(type="job", data={"i": i})
seen = []
failed = []
def handler(event):
    if event["sequence"] == 4 and not failed:
        failed.append(1)
        raise RuntimeError("once")
    seen.append(event["sequence"])
loaded.consume(handler, type="job", on_commit=lambda c: loaded.save(path), idle_seconds=1, retry_delay=0.05)
assert seen == [3, 4, 5, 6, 7], seen
assert ReturnAddress.load(path).cursor == 7
assert all(e["acknowledged_at"] for e in loaded.events(after=2))
named = []
loaded.consume(lambda e: named.append(e["sequence"]), consumer="py", type="job", idle_seconds=1)
assert named == [3, 4, 5, 6, 7], named
r = subprocess.run([sys.executable, module, "consume", "--save", path, "--exec", "test \"$RA_EVENT_TYPE\" = job", "--consumer", "py2",
                    "--type", "job", "--until-idle", "1"], env=fresh, capture_output=True, text=True)
assert r.returncode == 0 and r.stderr.count("exit 0") == 5, r.stderr
r = subprocess.run([sys.executable, module, "ask", "--save", path, "Nobody answers?", "--option", "go=Go", "--option", "stop=Stop",
                    "--field", "why!:select:Why:a|b", "--timeout", "1"], env=env, capture_output=True, text=True)
assert r.returncode == 2 and "/approve/apr_" in r.stderr and r.stdout == "", (r.returncode, r.stderr)
r = subprocess.run([sys.executable, module, "delete", "--save", path], env=env, capture_output=True, text=True)
assert r.returncode == 0 and json.loads(r.stdout)["deleted"] == saved["address"]["id"]

# ---- ask(): the person answers on the page's URL (here: the page's form POST); the decided event comes back ----
import urllib.request as _ur


def answer(option, fields=None):
    def on_url(link, approval):
        assert approval["status"] == "pending" and link.startswith(url + "/approve/" + approval["id"] + "/")
        def post():
            time.sleep(0.3)
            body = "option=" + option + "".join("&field.%s=%s" % kv for kv in (fields or {}).items())
            _ur.urlopen(_ur.Request(link, data=body.encode(), method="POST",
                                    headers={"Content-Type": "application/x-www-form-urlencoded"}), timeout=10).read()
        threading.Thread(target=post).start()
    return on_url


ev = ra.ask("Approve the purchase?", fields=[{"name": "note", "label": "Note", "type": "text"}], on_url=answer("approve", {"note": "ok"}), timeout=20)
assert ev and ev["type"] == "approval.decided" and ev["data"]["option"] == "approve" and ev["data"]["fields"] == {"note": "ok"}, ev
got = ra.get_approval(ev["data"]["approval_id"])
assert got["status"] == "decided" and got["answers"][0]["option"] == "approve", got
pending = ra.create_approval("Cancel me")
assert ra.cancel_approval(pending["id"])["status"] == "cancelled"
assert ra.ask("Nobody?", on_url=lambda u, a: None, timeout=1) is None
try:
    ra.create_approval("q", options=[{"id": "a", "label": "A"}])
    raise AssertionError("one option accepted")
except ReturnAddressError as err:
    assert err.status == 400 and "options" in err.message, err

ra.delete()
try:
    ra.get()
    raise AssertionError("deleted address still readable")
except ReturnAddressError as err:
    assert err.status == 404
# The save file goes through an unpredictable name created exclusively: a planted pid-named
# symlink is not followed, so another local user cannot receive the read token.
_ra = sys.modules.get("return_address.return_address") or sys.modules["return_address"]  # the module itself, private helpers included (installed: the package's return_address.py)
work = tempfile.mkdtemp()
victim = os.path.join(work, "victim.txt")
with open(victim, "w") as f:
    f.write("untouched")
target = os.path.join(work, "saved.json")
os.symlink(victim, "%s.%d.tmp" % (target, os.getpid()))
_ra._save(target, {"credentials": {"read_token": "aa_read_x"}, "cursor": 0})
assert open(victim).read() == "untouched", "the symlink target was not written"
assert os.stat(target).st_mode & 0o777 == 0o600
assert json.load(open(target))["cursor"] == 0
assert sorted(os.listdir(work)) == sorted(["victim.txt", "saved.json", "saved.json.%d.tmp" % os.getpid()]), os.listdir(work)

# Authorization is not sent on a redirect to another origin (as browsers and requests do), and is
# kept on a redirect within the same origin.
import http.server  # noqa: E402
seen = {}
class Other(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        seen[self.path] = self.headers.get("Authorization")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *a):
        pass
other = http.server.HTTPServer(("127.0.0.1", 0), Other)
class First(Other):
    def do_GET(self):
        seen[self.path] = self.headers.get("Authorization")
        if self.path == "/cross":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:%d/landed" % other.server_port)
            self.end_headers()
        elif self.path == "/same":
            self.send_response(302)
            self.send_header("Location", "/same-landed")
            self.end_headers()
        else:
            Other.do_GET(self)
first = http.server.HTTPServer(("127.0.0.1", 0), First)
for srv in (first, other):
    threading.Thread(target=srv.serve_forever, daemon=True).start()
_ra._request("GET", "http://127.0.0.1:%d/cross" % first.server_port, token="aa_read_secret")
assert seen["/cross"] == "Bearer aa_read_secret"
assert seen["/landed"] is None, "the token went to another origin: %r" % seen["/landed"]
_ra._request("GET", "http://127.0.0.1:%d/same" % first.server_port, token="aa_read_secret")
assert seen["/same-landed"] == "Bearer aa_read_secret"
first.shutdown()
other.shutdown()

print("python client: all checks passed")
