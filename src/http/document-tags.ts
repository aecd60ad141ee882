// The OpenAPI document's tags, in the order a reader meets them: one per resource, each route names one.
export const DOCUMENT_TAGS = [
  { name: 'addresses', description: 'Create, read and delete a return address (its email address, inbox URL and read token).' },
  { name: 'events', description: 'The ordered, durable queue of an address: read with a cursor and long-polling, acknowledge.' },
  {
    name: 'claims',
    description:
      'Several workers sharing one address: lease events, then ack, extend or nack through the lease (a fencing token); redelivery after a lease runs out, dead events after max_deliveries.',
  },
  {
    name: 'push',
    description:
      'Webhook subscriptions: each matching event POSTed to your URL, in order, signed with Standard Webhooks, retried on a schedule, paused and resumable.',
  },
  { name: 'inbox', description: 'Write-only delivery of an event by whoever must call back, with the secret in the URL.' },
  {
    name: 'capture',
    description:
      'The capture URL: any request from any sender (GitHub, Stripe, Slack, OAuth redirects) stored as it came, and the secrets that check their signatures.',
  },
  { name: 'approvals', description: 'Ask a person: a page with one button per option, whose answer arrives as an event (approval.decided) in the queue.' },
  {
    name: 'trust',
    description: "Who may send: the address's sender policy, and the events it quarantined (released with POST …/events/{eventId}/release).",
  },
  { name: 'mcp', description: 'The same queue as a Model Context Protocol server (Streamable HTTP, stateless).' },
  { name: 'documents', description: 'This description and the plain-text guides for agents.' },
  { name: 'inspect', description: 'A live page for a person to watch a queue.' },
  { name: 'operations', description: 'Liveness and readiness probes.' },
];
