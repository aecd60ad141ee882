"""Driven by test/client/python-subscriptions.test.ts: the Python client's webhook subscription methods
against the live service (argv[1], PUSH_ALLOW_PRIVATE=true) and the test's local receiver (argv[2]):
subscribe with a type filter and a generated secret, list, show, deliver N matching events and one
the filter passes over, wait until the position is past them all, resume, unsubscribe. Imports the
source module (stdlib only). Prints one JSON line for the test, which checks what the receiver got:
signed, in order. Any failed assert exits non-zero with a traceback."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from return_address import ReturnAddress, ReturnAddressError  # noqa: E402

url, receiver, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

ra = ReturnAddress.create(url, name="py-push")
sub = ra.subscribe(receiver, type="py.*")
sid = sub["id"]
assert sid.startswith("sub_"), sub
assert sub["consumer"] == "push:" + sid and sub["url"] == receiver and sub["type"] == ["py.*"], sub
secret = sub["secret"]
assert secret.startswith("whsec_"), "a generated secret is returned once"
assert "secret" not in ra.subscription(sid), "and never shown again"
assert [s["id"] for s in ra.subscriptions()] == [sid]

for i in range(1, n + 1):
    ra.deliver("py.n", {"i": i})
    if i == 2:
        ra.deliver("other.x", {"skip": True})  # passed over by the filter: the position moves past it
deadline = time.time() + 30
while ra.subscription(sid)["cursor"] < n + 1:
    assert time.time() < deadline, "position past all %d events within 30 s: %r" % (n + 1, ra.subscription(sid))
    time.sleep(0.05)
shown = ra.subscription(sid)
assert shown["state"] == "active" and shown["attempts"] == 0 and shown["last_status"] == 200, shown
assert ra.resume_subscription(sid)["id"] == sid

ra.unsubscribe(sid)
assert ra.subscriptions() == [], "deleted"
for call in (lambda: ra.subscription(sid), lambda: ra.unsubscribe(sid), lambda: ra.resume_subscription(sid)):
    try:
        call()
        raise AssertionError("an unknown subscription must be 404")
    except ReturnAddressError as e:
        assert e.status == 404 and e.code == "not_found", (e.status, e.code)
try:
    ra.subscribe("ftp://example.com/x")
    raise AssertionError("a bad url must be refused")
except ReturnAddressError as e:
    assert e.status == 400 and e.code == "invalid_request" and "url" in str(e), str(e)

print(json.dumps({"address_id": ra.id, "token": ra.token, "subscription_id": sid, "secret": secret}))
