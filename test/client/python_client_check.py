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
assert ra.ack(e["id"])["acknowledged_at"]

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

# The CLI: create --save (0600, response + cursor), wait with exit 0 / 2, --ack advances the cursor.
env = dict(os.environ, RETURN_ADDRESS_URL=url)
path = os.path.join(tempfile.mkdtemp(), "a.json")
r = subprocess.run([sys.executable, module, "create", "--save", path], env=env, capture_output=True, text=True)
assert r.returncode == 0, r.stderr
assert os.stat(path).st_mode & 0o777 == 0o600
saved = json.load(open(path))
assert saved == dict(json.loads(r.stdout), cursor=0)
r = subprocess.run([sys.executable, module, "deliver", "--save", path, "--type", "x", "--data", '{"code":"123456"}'], env=env, capture_output=True, text=True)
assert r.returncode == 0, r.stderr
r = subprocess.run([sys.executable, module, "wait", "--save", path, "--type", "x", "--match", "data.code=123456", "--ack", "--timeout", "5"], env=env, capture_output=True, text=True)
assert r.returncode == 0 and json.loads(r.stdout)["acknowledged_at"], r.stderr
assert json.load(open(path))["cursor"] == 1
r = subprocess.run([sys.executable, module, "wait", "--save", path, "--timeout", "1"], env=env, capture_output=True, text=True)
assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout)
r = subprocess.run([sys.executable, module, "delete", "--save", path], env=env, capture_output=True, text=True)
assert r.returncode == 0 and json.loads(r.stdout)["deleted"] == saved["address"]["id"]

ra.delete()
try:
    ra.get()
    raise AssertionError("deleted address still readable")
except ReturnAddressError as err:
    assert err.status == 404
print("python client: all checks passed")
