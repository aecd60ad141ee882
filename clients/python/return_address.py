#!/usr/bin/env python3
"""Return Address client for Python agents: one stdlib-only file (Python 3.9+), no pip.

    from return_address import ReturnAddress
    ra = ReturnAddress.create(url="http://localhost:3000", name="signup")
    print(ra.email)                       # give this (or ra.inbox_url) to whoever must answer
    event = ra.wait_for(type="email.received", match={"data.from.address": "noreply@github.com"}, timeout=300)
    if event: print(event["data"]["extracted"]["otp_codes"]); ra.ack(event["id"])

The same verbs as the TypeScript client and the `return-address` CLI (decisions sections 12, 14):
create, get, deliver, events, wait_for, consume, ack, delete. Filters (`type` exact or `prefix.*`,
`match` dotted paths, `state`) are evaluated by the service, with the rule of
src/domain/event-match.ts (JSON true and "true" both match "true"). wait_for long-polls and retries
network errors and 429/5xx answers with backoff from the same cursor, so no event is skipped or
returned twice. consume(handler) reads at-least-once: handle, then ack and commit; dedupe by id.
Responses have the HTTP API's shapes (ack returns {"event": ...}). save()/load() read and write
the file `return-address create --save` writes (create response + cursor + url).

As a CLI: python3 return_address.py create --save a.json; python3 return_address.py wait --save a.json --type email.received
"""
import argparse
import datetime
import json
import os
import random
import subprocess
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


def _type_matches(t: Any, pattern: str) -> bool:
    if not isinstance(t, str):
        return False
    return t.startswith(pattern[:-1]) if pattern.endswith(".*") else t == pattern


def _match_text(v: Any) -> str:
    """A match value as text: JSON true, numbers and null stand for their JSON text."""
    return v if isinstance(v, str) else json.dumps(v)


def event_matches(event: Dict[str, Any], type: Any = None, match: Optional[Dict[str, Any]] = None) -> bool:
    """Same rule as src/domain/event-match.ts: type exact or prefix.* (any of a list); each dotted path equals its value as text."""
    types = [type] if isinstance(type, str) else list(type or [])
    if types and not any(_type_matches(event.get("type"), t) for t in types):
        return False
    for path, expected in ((p, _match_text(v)) for p, v in (match or {}).items()):
        v = value_at(event, path)
        if v is _MISSING or not _equals_text(v, expected):
            return False
    return True


def _filter_params(type: Any, match: Optional[Dict[str, Any]], state: Optional[str]) -> List[Any]:
    q: List[Any] = [("type", t) for t in ([type] if isinstance(type, str) else list(type or []))]
    q.extend(("match", "%s=%s" % (p, _match_text(v))) for p, v in (match or {}).items())
    if state is not None:
        q.append(("state", state))
    return q


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
               ttl: Optional[int] = None) -> "ReturnAddress":
        body: Dict[str, Any] = {}
        if name is not None:
            body["name"] = name
        if task_id is not None:
            body["task_id"] = task_id
        if ttl is not None:
            body["expires_in_seconds"] = ttl
        created = _request("POST", resolve_url(url) + "/api/v1/addresses", body=body)
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

    def page(self, after: Optional[int] = None, limit: Optional[int] = None, wait: int = 0, type: Any = None,
             match: Optional[Dict[str, Any]] = None, state: Optional[str] = None, consumer: Optional[str] = None) -> Dict[str, Any]:
        """One page {events, next_cursor, has_more}. Filters run on the service; with a filter next_cursor is the
        last event examined. `consumer` reads for a named consumer (after=N stores N first; without after, its position)."""
        q: List[Any] = []
        if after is not None or consumer is None:
            q.append(("after", self.cursor if after is None else after))
        q.append(("wait", wait))
        if limit is not None:
            q.append(("limit", limit))
        q.extend(_filter_params(type, match, state))
        if consumer is not None:
            q.append(("consumer", consumer))
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

    def wait_for(self, type: Any = None, match: Optional[Dict[str, Any]] = None,
                 timeout: float = 300, after: Optional[int] = None, state: Optional[str] = None) -> Optional[Dict[str, Any]]:
        """The first event after the cursor that passes the filter (evaluated by the service), or None on timeout.
        Sets `cursor` to the event's sequence (or how far it scanned on timeout)."""
        deadline = time.monotonic() + timeout
        cur = self.cursor if after is None else after
        while True:
            wait = min(MAX_POLL_SECONDS, max(0, int(-(-(deadline - time.monotonic()) // 1))))
            page = self._retrying(lambda: self.page(cur, 1, wait, type, match, state), deadline)
            cur = page["next_cursor"]
            if page["events"]:
                e = page["events"][0]
                self.cursor = e["sequence"]
                return e
            if time.monotonic() >= deadline and not page["has_more"]:
                self.cursor = cur
                return None

    def consume(self, handler: Callable[[Dict[str, Any]], Any], type: Any = None, match: Optional[Dict[str, Any]] = None,
                state: Optional[str] = None, consumer: Optional[str] = None, after: Optional[int] = None, ack: bool = True,
                on_commit: Optional[Callable[[int], Any]] = None, idle_seconds: Optional[int] = None,
                retry_delay: float = 1.0) -> None:
        """At-least-once, in order: each (matching) event goes to handler; once it returns, the event is acked
        (unless ack=False) and the position committed (this client's cursor and on_commit, or the named consumer's
        on the service, which the next read confirms). A handler that raises is retried on the same event with
        backoff (retry_delay doubling to 60 s). Returns after a long-poll of idle_seconds finds nothing, if given.
        A crash re-delivers what was not committed: dedupe by event id."""
        named = consumer is not None
        position = after if after is not None else (None if named else self.cursor)
        forever = float("inf")
        while True:
            page = self._retrying(lambda: self.page(position, 1 if named else 20, MAX_POLL_SECONDS if idle_seconds is None else idle_seconds,
                                                    type, match, state, consumer), forever)
            events = page["events"]
            for i, event in enumerate(events):
                attempt = 0
                while True:
                    try:
                        handler(event)
                        break
                    except Exception as err:  # noqa: BLE001 - any failure of the handler means "not handled"
                        attempt += 1
                        print("consume: sequence %d: %s; retry %d" % (event["sequence"], err, attempt), file=sys.stderr)
                        time.sleep(min(60.0, retry_delay * 2 ** (attempt - 1)))
                if ack:
                    self._retrying(lambda: self.ack(event["id"]), forever)
                position = page["next_cursor"] if i == len(events) - 1 else event["sequence"]
                if not named:
                    self.cursor = position
                if on_commit:
                    on_commit(position)
            if not events:
                position = page["next_cursor"]
                if not named:
                    self.cursor = position
                if idle_seconds is not None and not page["has_more"]:
                    if named:
                        self._retrying(lambda: self.page(position, 1, 0, consumer=consumer), forever)
                    elif on_commit:
                        on_commit(position)
                    return

    def save(self, path: str) -> None:
        """Writes the CLI's saved file (create response + cursor + url), mode 0600."""
        if self.created is None:
            raise ReturnAddressError(0, "no_create_response", "only a client built from a create response can be saved")
        save_file(path, dict(self.created, cursor=self.cursor, url=self.url))

    @classmethod
    def load(cls, path: str, url: Optional[str] = None) -> "ReturnAddress":
        """A client from the file `return-address create --save` (or save()) wrote: its URL and cursor too."""
        saved = load_file(path)
        return cls.from_created(saved, url or saved.get("url"))

    def ack(self, event_id: str) -> Dict[str, Any]:
        """Acknowledges an event (idempotent); returns {"event": ...} as HTTP does."""
        return _request("POST", "%s/events/%s/ack" % (self._base(), urllib.parse.quote(event_id)), self.token)

    # Claims: several workers on one address. Each claim is {event, lease_id, lease_expires_at,
    # delivery_count}; settle it through its lease (ReturnAddressError code "lease_lost" once superseded).
    def claim(self, max: int = 1, lease_seconds: int = 60, wait: int = 0, max_deliveries: int = 5,
              type: Any = None, match: Any = None) -> List[Dict[str, Any]]:
        body: Dict[str, Any] = {"max": max, "lease_seconds": lease_seconds, "wait": wait, "max_deliveries": max_deliveries}
        if type is not None:
            body["type"] = type
        if match is not None:
            body["match"] = match
        return _request("POST", "%s/claims" % self._base(), self.token, body, timeout=wait + 30)["claims"]

    def ack_claim(self, lease_id: str) -> Dict[str, Any]:
        return _request("POST", "%s/claims/%s/ack" % (self._base(), urllib.parse.quote(lease_id)), self.token)["event"]

    def extend_claim(self, lease_id: str, lease_seconds: int = 60) -> str:
        return _request("POST", "%s/claims/%s/extend" % (self._base(), urllib.parse.quote(lease_id)), self.token,
                        {"lease_seconds": lease_seconds})["lease_expires_at"]

    def nack_claim(self, lease_id: str, delay_seconds: int = 0, reason: Optional[str] = None, dead: bool = False) -> Dict[str, Any]:
        body: Dict[str, Any] = {"delay_seconds": delay_seconds, "dead": dead}
        if reason is not None:
            body["reason"] = reason
        return _request("POST", "%s/claims/%s/nack" % (self._base(), urllib.parse.quote(lease_id)), self.token, body)["event"]

    def consume_claims(self, handler, lease_seconds: int = 60, max_deliveries: int = 5, type: Any = None,
                       match: Any = None, idle_seconds: Optional[int] = None) -> None:
        """One worker among several on this address: claims one event at a time, calls handler(event),
        acks the claim when it returns and nacks it (delay 1 s doubling per delivery, at most 60 s) when
        it raises. A lease_lost answer (the lease ran out and another worker took the event) is skipped.
        Returns once a claim waiting idle_seconds finds nothing; without idle_seconds it runs forever."""
        wait = 25 if idle_seconds is None else idle_seconds
        while True:
            claims = self.claim(max=1, lease_seconds=lease_seconds, wait=wait, max_deliveries=max_deliveries, type=type, match=match)
            if not claims and idle_seconds is not None:
                return
            for c in claims:
                try:
                    try:
                        handler(c["event"])
                    except Exception as e:  # the handler failed: give the event back
                        delay = min(60, 2 ** (c["delivery_count"] - 1))
                        self.nack_claim(c["lease_id"], delay_seconds=delay, reason=str(e)[:500])
                        continue
                    self.ack_claim(c["lease_id"])
                except ReturnAddressError as e:
                    if e.code != "lease_lost":
                        raise

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

def load_file(path: str) -> Dict[str, Any]:
    """The saved file: the create response, plus cursor and url."""
    with open(path) as f:
        saved = json.load(f)
    saved.setdefault("cursor", 0)
    return saved


def save_file(path: str, saved: Dict[str, Any]) -> None:
    """Writes the saved file atomically (write, then rename), mode 0600: it holds the credentials."""
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


_save = save_file  # the name earlier versions used


def _out(v: Any) -> None:
    print(json.dumps(v, indent=2, ensure_ascii=False))


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="return_address.py", description="Return Address client (stdlib only).")
    sub = p.add_subparsers(dest="command", required=True)

    def cmd(name: str, help: str, save: bool = True) -> argparse.ArgumentParser:
        s = sub.add_parser(name, help=help, description=help)
        s.add_argument("--url", help="service base URL (default: the saved file's, else $RETURN_ADDRESS_URL, else %s)" % DEFAULT_URL)
        s.add_argument("--save", required=save, help="the file `create --save` wrote")
        return s

    c = cmd("create", "create an address; --save FILE keeps the response (0600)", save=False)
    c.add_argument("--name")
    c.add_argument("--task-id")
    c.add_argument("--ttl", type=int)
    c.add_argument("--print-credentials", action="store_true", help="with --save, print the whole response too")
    w = cmd("wait", "print the first matching event after the saved cursor; exit 2 on timeout")
    w.add_argument("--type")
    w.add_argument("--match", action="append", default=[], help="path=value, dotted into the event; repeatable")
    w.add_argument("--timeout", type=float, default=300)
    w.add_argument("--ack", action="store_true", help="acknowledge it (and, unfiltered, advance the saved cursor)")
    e = cmd("events", "print one page after the saved cursor (--advance moves it)")
    e.add_argument("--type", action="append")
    e.add_argument("--match", action="append", default=[])
    e.add_argument("--advance", action="store_true", help="save next_cursor as the cursor (once the page is handled)")
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
    k = cmd("consume", "run --exec CMD once per event, at-least-once, in order (see `return-address consume --help`)")
    k.add_argument("--exec", required=True, dest="exec_cmd")
    k.add_argument("--type", action="append")
    k.add_argument("--match", action="append", default=[])
    k.add_argument("--consumer")
    k.add_argument("--until-idle", type=int)
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
            url = resolve_url(args.url)
            ra = ReturnAddress.create(url, args.name, args.task_id, args.ttl)
            if not args.save or args.print_credentials:
                _out(ra.created)
            if args.save:
                save_file(args.save, dict(ra.created, cursor=0, url=url))
                print("created %s; credentials saved to %s (mode 0600)" % (ra.email, args.save), file=sys.stderr)
                if not args.print_credentials:
                    ep = ra.created["endpoints"]
                    _out({"address": ra.created["address"], "endpoints": {"events_url": ep["events_url"], "mcp_url": ep["mcp_url"]},
                          "saved_to": args.save})
            return 0
        saved = load_file(args.save)
        ra = ReturnAddress.from_created(saved, args.url or saved.get("url"))
        if args.command == "wait":
            match = parse_match(args.match)
            event = ra.wait_for(args.type, match, args.timeout)
            if event is None:
                print("timed out: no matching event after cursor %d" % saved["cursor"], file=sys.stderr)
                return 2
            if args.ack:
                event = ra.ack(event["id"])["event"]
                # A filtered wait passed over other events: the saved cursor stays before them.
                if args.type is None and not match:
                    save_file(args.save, dict(saved, cursor=ra.cursor))
            _out(event)
        elif args.command == "events":
            page = ra.page(saved["cursor"] if args.after is None else args.after, args.limit, args.wait, args.type, parse_match(args.match))
            if args.advance:
                save_file(args.save, dict(saved, cursor=page["next_cursor"]))
            _out(page)
        elif args.command == "consume":
            def run(event: Dict[str, Any]) -> None:
                env = dict(os.environ, RA_EVENT_ID=event["id"], RA_EVENT_TYPE=event["type"], RA_SEQUENCE=str(event["sequence"]))
                code = subprocess.run(args.exec_cmd, shell=True, input=json.dumps(event) + "\n", text=True, env=env).returncode
                print("consume: sequence %d %s exit %d" % (event["sequence"], event["type"], code), file=sys.stderr)
                if code != 0:
                    raise RuntimeError("the command exited with %d" % code)
            commit = None if args.consumer else (lambda cursor: save_file(args.save, dict(saved, cursor=cursor)))
            try:
                ra.consume(run, args.type, parse_match(args.match), consumer=args.consumer, on_commit=commit, idle_seconds=args.until_idle)
            except KeyboardInterrupt:
                return 0
        elif args.command == "get":
            _out({"address": ra.get()})
        elif args.command == "ack":
            _out(ra.ack(args.event_id))
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
