/**
 * Signed webhooks, shared by the cloud (node status) and the wallet node (wallet events): where they may go
 * (`ssrf.ts`), how one is posted (`post.ts`), signed (`signing.ts`) and retried (`schedule.ts`).
 */
export * from './post.ts';
export * from './schedule.ts';
export * from './signing.ts';
export * from './ssrf.ts';
