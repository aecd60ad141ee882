// The signature schemes the capture URL checks and `forward --resign` signs with (design.md,
// "Capture URL"). A file of its own, importing nothing, so the CLI and forward/ can name the schemes
// without loading the sealed secrets beside them.
export const SIGNING_SCHEMES = ['github', 'stripe', 'slack', 'standard_webhooks'] as const;
export type SigningScheme = (typeof SIGNING_SCHEMES)[number];
