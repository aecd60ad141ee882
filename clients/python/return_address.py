#!/usr/bin/env python3
"""Return Address client for Python agents: one stdlib-only file (Python 3.9+), no pip.

    from return_address import ReturnAddress
    ra = ReturnAddress.create(url="http://localhost:3000", name="signup")
    print(ra.email)                       # give this (or ra.inbox_url) to whoever must answer
    event = ra.wait_for(type="email.received", match={"data.from.address": "noreply@github.com"}, timeout=300)
    if event: print(event["data"]["extracted"]["otp_codes"]); ra.ack(event["id"])

The same verbs as the TypeScript client and the `return-address` CLI (decisions section 12):
create, get, deliver, events, wait_for, ack, delete. `match` paths are dotted into the event and
compare like src/domain/event-match.ts. wait_for long-polls and retries network errors and
429/5xx answers with backoff from the same cursor, so no event is skipped or returned twice.

As a CLI: python3 return_address.py create --save a.json; python3 return_address.py wait --save a.json --type email.received
"""
import argparse
import datetime
import json
import os
import random
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Optional

DEFAULT_URL = "http://localhost:3000"
MAX_POLL_SECONDS = 25


class ReturnAddressError(Exception):
    """status is the HTTP status (0 when no response came); code the API's error code."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return "%s (HTTP %d): %s" % (self.code, self.status, self.message)


def resolve_url(url: Optional[str] = None) -> str:
    return (url or os.environ.get("RETURN_ADDRESS_URL") or DEFAULT_URL).rstrip("/")


_MISSING = object()


def value_at(root: Any, path: str) -> Any:
    v = root
    for key in path.split("."):
        if isinstance(v, dict) and key in v:
            v = v[key]
        elif isinstance(v, list) and key.isdigit() and int(key) < len(v):
            v = v[int(key)]
        else:
            return _MISSING
    return v


def _equals_text(v: Any, expected: str) -> bool:
    if isinstance(v, str):
        return v == expected
    if isinstance(v, bool) or v is None or isinstance(v, (int, float)):
        return json.dumps(v) == expected
    if isinstance(v, list):
        return any(not isinstance(x, list) and _equals_text(x, expected) for x in v)
    return False


def event_matches(event: Dict[str, Any], type: Optional[str] = None, match: Optional[Dict[str, str]] = None) -> bool:
    """Same rule as src/domain/event-match.ts: exact type; each dotted path equals its value as text."""
    if type is not None and event.get("type") != type:
        return False
    for path, expected in (match or {}).items():
        v = value_at(event, path)
        if v is _MISSING or not _equals_text(v, expected):
            return False
    return True


def parse_match(pairs: List[str]) -> Dict[str, str]:
    out = {}
    for pair in pairs:
        i = pair.find("=")
        if i <= 0:
            raise ValueError('match "%s" must look like path=value (e.g. data.from.address=a@b.c)' % pair)
        out[pair[:i]] = pair[i + 1:]
    return out


class _NoCredentialsAcrossOrigins(urllib.request.HTTPRedirectHandler):
    """Follows redirects, but drops Authorization when one leads to another scheme, host or port
    (as browsers and requests do): the read token is for this service only."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            old, nxt = urllib.parse.urlsplit(req.full_url), urllib.parse.urlsplit(new.full_url)
            if (old.scheme, old.hostname, old.port) != (nxt.scheme, nxt.hostname, nxt.port):
                for name in [k for k in new.headers if k.lower() == "authorization"]:
                    del new.headers[name]
                new.unredirected_hdrs.pop("Authorization", None)
        return new


_opener = urllib.request.build_opener(_NoCredentialsAcrossOrigins)


def _request(method: str, url: str, token: Optional[str] = None, body: Any = None,
             headers: Optional[Dict[str, str]] = None, timeout: float = 30) -> Any:
    h = dict(headers or {})
    data = None
    if token:
        h["Authorization"] = "Bearer " + token
    if body is not None:
        h["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    try:
        with _opener.open(req, timeout=timeout) as res:
            text = res.read().decode()
            return json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read().decode(errors="replace")
        try:
            err = json.loads(text)["error"]
            raise ReturnAddressError(e.code, err["code"], err["message"]) from None
        except (ValueError, KeyError, TypeError):
            raise ReturnAddressError(e.code, "bad_response", "%s %s: HTTP %d" % (method, url, e.code)) from None
    except (urllib.error.URLError, OSError) as e:  # refused, reset, timed out
        raise ReturnAddressError(0, "network_error", "%s %s: %s" % (method, url, getattr(e, "reason", e))) from None


def _transient(e: ReturnAddressError) -> bool:
    return e.status == 0 or e.status == 429 or e.status >= 500


class ReturnAddress:
    """One address. `cursor` is the sequence of the last event consumed; wait_for advances it."""

    def __init__(self, id: str, token: str, url: Optional[str] = None, inbox_url: Optional[str] = None,
                 cursor: int = 0, created: Optional[Dict[str, Any]] = None):
        self.url = resolve_url(url)
        self.id = id
        self.token = token
        self.inbox_url = inbox_url
        self.cursor = cursor
        self.created = created

    @property
    def email(self) -> Optional[str]:
        return self.created["address"]["email"] if self.created else None

    @classmethod
    def create(cls, url: Optional[str] = None, name: Optional[str] = None, task_id: Optional[str] = None,
               ttl: Optional[int] = None, create_token: Optional[str] = None) -> "ReturnAddress":
        """create_token: for a service whose operator set CREATE_TOKENS (default $RETURN_ADDRESS_CREATE_TOKEN)."""
        body: Dict[str, Any] = {}
        if name is not None:
            body["name"] = name
        if task_id is not None:
            body["task_id"] = task_id
        if ttl is not None:
            body["expires_in_seconds"] = ttl
        created = _request("POST", resolve_url(url) + "/api/v1/addresses",
                           create_token or os.environ.get("RETURN_ADDRESS_CREATE_TOKEN"), body=body)
        return cls.from_created(created, url)

    @classmethod
    def from_created(cls, created: Dict[str, Any], url: Optional[str] = None) -> "ReturnAddress":
        """From a create response, e.g. the file `create --save` wrote (its `cursor` too)."""
        return cls(created["address"]["id"], created["credentials"]["read_token"], url,
                   created["endpoints"]["inbox_url"], int(created.get("cursor", 0)), created)

    def _base(self) -> str:
        return "%s/api/v1/addresses/%s" % (self.url, urllib.parse.quote(self.id))

    def get(self) -> Dict[str, Any]:
        return _request("GET", self._base(), self.token)["address"]

    def deliver(self, type: Optional[str] = None, data: Any = None, source: Optional[str] = None,
                metadata: Optional[Dict[str, str]] = None, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """POST to the inbox URL; returns {"event", "duplicate"}."""
        if not self.inbox_url:
            raise ReturnAddressError(0, "no_inbox_url", "this client has no inbox URL: build it from the create response")
        body: Dict[str, Any] = {}
        for k, v in (("type", type), ("data", data), ("source", source), ("metadata", metadata)):
            if v is not None:
                body[k] = v
        return _request("POST", self.inbox_url, body=body,
                        headers={"Idempotency-Key": idempotency_key} if idempotency_key else None)

    def page(self, after: Optional[int] = None, limit: Optional[int] = None, wait: int = 0) -> Dict[str, Any]:
        q = {"after": self.cursor if after is None else after, "wait": wait}
        if limit is not None:
            q["limit"] = limit
        # A silently dead connection must not hang the caller: give up a while after the server would have answered.
        return _request("GET", self._base() + "/events?" + urllib.parse.urlencode(q), self.token, timeout=wait + 15)

    def _retrying(self, read, deadline: float):
        attempt = 0
        while True:
            try:
                return read()
            except ReturnAddressError as e:
                delay = min(5.0, 0.2 * 2 ** attempt) * (0.5 + random.random() / 2)
                attempt += 1
                if not _transient(e) or time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)

    def events(self, after: Optional[int] = None, limit: Optional[int] = None) -> Iterator[Dict[str, Any]]:
        """Every event after `after` (default the cursor) in order, page by page; does not move the cursor."""
        cur = self.cursor if after is None else after
        while True:
            page = self._retrying(lambda: self.page(cur, limit), time.monotonic() + 30)
            for e in page["events"]:
                yield e
            cur = page["next_cursor"]
            if not page["has_more"]:
                return

    def wait_for(self, type: Optional[str] = None, match: Optional[Dict[str, str]] = None,
                 timeout: float = 300, after: Optional[int] = None) -> Optional[Dict[str, Any]]:
        """The first event after the cursor with `type` and every `match`, or None on timeout.
        Sets `cursor` to the event's sequence (or how far it scanned on timeout)."""
        deadline = time.monotonic() + timeout
        cur = self.cursor if after is None else after
        while True:
            wait = min(MAX_POLL_SECONDS, max(0, int(-(-(deadline - time.monotonic()) // 1))))
            page = self._retrying(lambda: self.page(cur, 100, wait), deadline)
            for e in page["events"]:
                if event_matches(e, type, match):
                    self.cursor = e["sequence"]
                    return e
            cur = page["next_cursor"]
            if time.monotonic() >= deadline and not page["has_more"]:
                self.cursor = cur
                return None

    def ack(self, event_id: str) -> Dict[str, Any]:
        return _request("POST", "%s/events/%s/ack" % (self._base(), urllib.parse.quote(event_id)), self.token)["event"]

    def delete(self) -> None:
        _request("DELETE", self._base(), self.token)

    # ---- Approvals: ask a person; their answer arrives as the event approval.decided ----

    def create_approval(self, question: str, details: Optional[str] = None, options: Optional[List[Dict[str, str]]] = None,
                        fields: Optional[List[Dict[str, Any]]] = None, expires_in: Optional[int] = None,
                        max_responses: Optional[int] = None) -> Dict[str, Any]:
        """Creates an approval; its `url` (shown only here) is the page to send to the person."""
        body: Dict[str, Any] = {"question": question}
        for k, v in (("details", details), ("options", options), ("fields", fields),
                     ("expires_in_seconds", expires_in), ("max_responses", max_responses)):
            if v is not None:
                body[k] = v
        return _request("POST", self._base() + "/approvals", self.token, body)["approval"]

    def get_approval(self, approval_id: str) -> Dict[str, Any]:
        return _request("GET", "%s/approvals/%s" % (self._base(), urllib.parse.quote(approval_id)), self.token)["approval"]

    def cancel_approval(self, approval_id: str) -> Dict[str, Any]:
        return _request("DELETE", "%s/approvals/%s" % (self._base(), urllib.parse.quote(approval_id)), self.token)["approval"]

    def ask(self, question: str, options: Optional[List[Dict[str, str]]] = None, fields: Optional[List[Dict[str, Any]]] = None,
            details: Optional[str] = None, expires_in: Optional[int] = None, timeout: Optional[float] = None,
            on_url: Optional[Callable[[str, Dict[str, Any]], None]] = None) -> Optional[Dict[str, Any]]:
        """Asks a person and returns the answer's event: approval.decided (event["data"]["option"],
        ["fields"], ["reason"]), or approval.expired / approval.cancelled; None if `timeout` seconds
        pass first. `on_url(url, approval)` gets the page's URL to send through your own channel
        (default: printed on stderr). The event is not acknowledged: ack it once acted upon."""
        approval = self.create_approval(question, details, options, fields, expires_in)
        if on_url is None:
            print("Open this link to answer (expires %s):\n%s" % (approval["expires_at"], approval["url"]), file=sys.stderr)
        else:
            on_url(approval["url"], approval)
        if timeout is None:
            expires = datetime.datetime.strptime(approval["expires_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
            # The expiry event comes within the server's sweep interval after expires_at.
            timeout = (expires - datetime.datetime.now(datetime.timezone.utc)).total_seconds() + 60
        return self.wait_for(match={"data.approval_id": approval["id"]}, timeout=timeout)


# ---- CLI, mirroring `return-address` (JSON on stdout, messages on stderr; exit 0 / 2 timeout / 1 error) ----

def _load(path: str) -> Dict[str, Any]:
    with open(path) as f:
        saved = json.load(f)
    saved.setdefault("cursor", 0)
    return saved


def _save(path: str, saved: Dict[str, Any]) -> None:
    # An unpredictable name created exclusively (mkstemp: O_EXCL, mode 0600), then renamed over the
    # file: a name derived from the pid could be planted first (a symlink, a readable file).
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(saved, f, indent=2)
            f.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _out(v: Any) -> None:
    print(json.dumps(v, indent=2, ensure_ascii=False))


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="return_address.py", description="Return Address client (stdlib only).")
    sub = p.add_subparsers(dest="command", required=True)

    def cmd(name: str, help: str, save: bool = True) -> argparse.ArgumentParser:
        s = sub.add_parser(name, help=help, description=help)
        s.add_argument("--url", help="service base URL (default $RETURN_ADDRESS_URL, else %s)" % DEFAULT_URL)
        s.add_argument("--save", required=save, help="the file `create --save` wrote")
        return s

    c = cmd("create", "create an address; --save FILE keeps the response (0600)", save=False)
    c.add_argument("--name")
    c.add_argument("--task-id")
    c.add_argument("--ttl", type=int)
    w = cmd("wait", "print the first matching event after the saved cursor; exit 2 on timeout")
    w.add_argument("--type")
    w.add_argument("--match", action="append", default=[], help="path=value, dotted into the event; repeatable")
    w.add_argument("--timeout", type=float, default=300)
    w.add_argument("--ack", action="store_true", help="acknowledge it and advance the saved cursor")
    e = cmd("events", "print one page after the saved cursor and advance it")
    e.add_argument("--after", type=int)
    e.add_argument("--limit", type=int)
    e.add_argument("--wait", type=int, default=0)
    cmd("get", "print the address")
    a = cmd("ack", "acknowledge an event")
    a.add_argument("event_id")
    d = cmd("deliver", "deliver an event to the saved inbox URL")
    d.add_argument("--type")
    d.add_argument("--source")
    d.add_argument("--data", help="any JSON value")
    d.add_argument("--key", help="idempotency key")
    cmd("delete", "delete the address and its events")
    q = cmd("ask", "ask a person: the approval page's URL on stderr, the answer's event on stdout; "
                   "exit 0 first option, 1 another, 2 expired, cancelled or timed out")
    q.add_argument("question")
    q.add_argument("--details")
    q.add_argument("--option", action="append", default=[], help="id=label; repeatable (default approve/deny)")
    q.add_argument("--field", action="append", default=[], help="name[!]:type[:label[:choice|choice...]]; repeatable")
    q.add_argument("--expires", type=int, help="the approval's lifetime in seconds")
    q.add_argument("--timeout", type=float)
    args = p.parse_args(argv)

    try:
        if args.command == "create":
            ra = ReturnAddress.create(args.url, args.name, args.task_id, args.ttl)
            if args.save:
                _save(args.save, dict(ra.created, cursor=0))
                print("created %s; saved to %s" % (ra.email, args.save), file=sys.stderr)
            _out(ra.created)
            return 0
        saved = _load(args.save)
        ra = ReturnAddress.from_created(saved, args.url)
        if args.command == "wait":
            event = ra.wait_for(args.type, parse_match(args.match), args.timeout)
            if event is None:
                print("timed out: no matching event after cursor %d" % saved["cursor"], file=sys.stderr)
                return 2
            if args.ack:
                event = ra.ack(event["id"])
                _save(args.save, dict(saved, cursor=ra.cursor))
            _out(event)
        elif args.command == "events":
            page = ra.page(saved["cursor"] if args.after is None else args.after, args.limit, args.wait)
            _save(args.save, dict(saved, cursor=page["next_cursor"]))
            _out(page)
        elif args.command == "get":
            _out({"address": ra.get()})
        elif args.command == "ack":
            _out({"event": ra.ack(args.event_id)})
        elif args.command == "deliver":
            _out(ra.deliver(args.type, None if args.data is None else json.loads(args.data), args.source, idempotency_key=args.key))
        elif args.command == "delete":
            ra.delete()
            _out({"deleted": ra.id})
        elif args.command == "ask":
            return _ask(ra, args)
        return 0
    except ReturnAddressError as err:
        print("return_address: %s" % err, file=sys.stderr)
        return 1
    except (OSError, ValueError) as err:
        print("return_address: %s" % err, file=sys.stderr)
        return 1


def _field_spec(spec: str) -> Dict[str, Any]:
    parts = spec.split(":")
    name, type_ = parts[0], parts[1] if len(parts) > 1 and parts[1] else "text"
    required = name.endswith("!")
    name = name.rstrip("!")
    f: Dict[str, Any] = {"name": name, "label": parts[2] if len(parts) > 2 and parts[2] else name, "type": type_, "required": required}
    if type_ == "select":
        f["choices"] = [c for c in (parts[3] if len(parts) > 3 else "").split("|") if c]
    return f


def _ask(ra: "ReturnAddress", args: argparse.Namespace) -> int:
    options = None
    if args.option:
        options = []
        for o in args.option:
            if "=" not in o or o.startswith("="):
                raise ValueError("--option %s: write id=label" % o)
            i, label = o.split("=", 1)
            options.append({"id": i, "label": label or i})
    first: List[str] = []
    event = ra.ask(args.question, options, [_field_spec(f) for f in args.field] or None, args.details, args.expires, args.timeout,
                   on_url=lambda url, a: (first.append(a["options"][0]["id"]),
                                          print("Open this link to answer (expires %s):\n%s" % (a["expires_at"], url), file=sys.stderr)))
    if event is None:
        print("timed out: no answer yet", file=sys.stderr)
        return 2
    _out(event)
    if event["type"] != "approval.decided":
        print("%s: no answer" % event["type"], file=sys.stderr)
        return 2
    return 0 if event["data"]["option"] == first[0] else 1


if __name__ == "__main__":
    sys.exit(main())
