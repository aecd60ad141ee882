-- Every event's provenance (design.md, "Trust: what an agent may believe"; src/domain/trust.ts): JSON
-- text written only by the service, `{"ingress","verified","method","identity","reason"}`.
-- Events stored before this migration get it from what the service itself recorded, and only where
-- that proves the way in: a key in the email namespace (chr(1) 'email:') was written by the SMTP
-- listener, one in the approval namespace by an approval step (no inbox key can hold a control
-- character), and bytes stored beside an event only by the capture URL or the SMTP listener. Any
-- other event may have come from the inbox URL, whose sender can write a capture's or a mail's
-- whole shape (data.signature, data.authentication), so it is an inbox delivery: verified null.
ALTER TABLE events ADD COLUMN trust TEXT NOT NULL DEFAULT '{"ingress":"inbox","verified":null,"method":null,"identity":null,"reason":"stored before this service recorded provenance, by a way in it cannot tell now: treated as an inbox delivery, nothing about the sender was checked"}';

UPDATE events SET trust = CASE
    WHEN substr(dedupe_key, -8) = ':expired' OR substr(dedupe_key, -10) = ':cancelled'
      THEN '{"ingress":"service","verified":true,"method":null,"identity":null,"reason":null}'
    ELSE '{"ingress":"approval","verified":true,"method":"approval_link","identity":null,"reason":null}'
  END
  WHERE substr(dedupe_key, 1, 10) = char(1) || 'approval:';

UPDATE events SET trust = CASE
    WHEN json_extract(data, '$.authentication.dmarc') = 'pass' THEN json_object(
      'ingress', 'email', 'verified', json('true'), 'method', 'dmarc',
      'identity', CASE WHEN instr(json_extract(data, '$.from.address'), '@') > 0
        THEN lower(substr(json_extract(data, '$.from.address'), instr(json_extract(data, '$.from.address'), '@') + 1)) END,
      'reason', NULL)
    ELSE json_object(
      'ingress', 'email',
      'verified', json(CASE WHEN json_extract(data, '$.authentication.dmarc') = 'fail' THEN 'false' ELSE 'null' END),
      'method', CASE WHEN json_extract(data, '$.authentication.dmarc') = 'fail' THEN 'dmarc' END,
      'identity', NULL,
      'reason', 'DMARC result is ' || coalesce(json_extract(data, '$.authentication.dmarc'), 'none') || ', not pass: the From address is not proven')
  END
  WHERE substr(dedupe_key, 1, 7) = char(1) || 'email:' AND json_valid(data);

UPDATE events SET trust = json_object(
    'ingress', 'capture',
    'verified', json(CASE json_type(data, '$.signature.verified') WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE 'null' END),
    'method', json_extract(data, '$.signature.scheme'),
    'identity', CASE WHEN json_type(data, '$.signature.verified') = 'true' THEN json_extract(data, '$.signature.scheme') END,
    'reason', CASE WHEN json_type(data, '$.signature.verified') = 'true' THEN NULL ELSE json_extract(data, '$.signature.reason') END)
  WHERE (dedupe_key IS NULL OR substr(dedupe_key, 1, 1) <> char(1)) AND json_valid(data)
    AND json_type(data, '$.signature') = 'object' AND json_type(data, '$.remote_ip') IS NOT NULL
    AND EXISTS (SELECT 1 FROM event_blobs b WHERE b.address_id = events.address_id AND b.sequence = events.sequence);
