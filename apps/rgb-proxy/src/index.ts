export {
  type BuildAppOptions,
  buildApp,
  DEFAULT_MAX_JSON_BYTES,
  DEFAULT_MAX_UPLOAD_BYTES,
  type ProxyApp,
  proxyEnvelope,
} from './app.ts';
export { ConfigSchema, type ProxyConfig, parseCli } from './config.ts';
export { E as RpcErrors, listRpcErrors, RpcError } from './errors.ts';
export { type MethodContext, PROTOCOL_VERSION, SERVER_VERSION } from './methods.ts';
export { RpcDispatcher, type RpcId, type RpcResponse } from './rpc.ts';
export { type ConsignmentEntry, type MediaEntry, ProxyStore, type StagedFile } from './store.ts';
