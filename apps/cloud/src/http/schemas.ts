/** Request and response schemas of the cloud API: defined once in `@rgbx/contracts/cloud` (shared with the SDK). */
export {
  CreateNodeBody,
  EventParams,
  ListQuery,
  Node,
  NodeIdParams,
  type NodeView,
  PublicKeyResponse,
  SettingsBody,
  WebhookEvent,
  WebhookUrl,
} from '@rgbx/contracts/cloud';
