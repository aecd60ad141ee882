// TypeBox schemas of POST …/rotate (rotation.ts): the route validates with them and
// /openapi.json is generated from them. The answer has the create answer's shape, holding only what
// changed: the new credentials are shown this once.
import { Type } from 'typebox';
import { INBOX_SECRET_RE, READ_TOKEN_RE } from '../../domain/credentials.js';
import { Address } from '../schemas.js';

export const RotateBody = Type.Object(
  {
    inbox_secret: Type.Optional(
      Type.Boolean({ description: 'true: a new inbox secret; the old inbox_url and hook_url are refused (404) from the answer on. Default false.' }),
    ),
    read_token: Type.Optional(
      Type.Boolean({ description: "true: a new read token; the old one is refused (401) from the answer on, this request's included. Default false." }),
    ),
  },
  {
    additionalProperties: false,
    title: 'RotateCredentialsBody',
    description: 'At least one of inbox_secret and read_token must be true.',
  },
);

export const RotateResponse = Type.Object(
  {
    address: Address,
    credentials: Type.Object(
      {
        read_token: Type.Optional(
          Type.String({ pattern: READ_TOKEN_RE.source, description: 'The new read token, when read_token was rotated. Shown only here, once. Store it.' }),
        ),
        note: Type.String(),
      },
      { additionalProperties: false },
    ),
    endpoints: Type.Object(
      {
        inbox_url: Type.Optional(
          Type.String({ format: 'uri', description: `The new inbox URL (its secret matches ${INBOX_SECRET_RE.source}), when inbox_secret was rotated.` }),
        ),
        hook_url: Type.Optional(Type.String({ format: 'uri', description: 'The new capture URL (the same new secret), when inbox_secret was rotated.' })),
        events_url: Type.String({ format: 'uri', description: 'Unchanged.' }),
        mcp_url: Type.String({ format: 'uri', description: 'Unchanged (use the new read token with it, if rotated).' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, title: 'RotateCredentialsResponse' },
);
