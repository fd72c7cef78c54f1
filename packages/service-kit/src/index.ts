// TypeBox and Fastify types are re-exported so services use the kit's exact copies.

// Re-exported so consumers see @fastify/swagger's schema augmentation (summary, tags, hide…) and `app.swagger()`.
export type { SwaggerOptions as FastifySwaggerOptions } from '@fastify/swagger';
export type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
export { type Static, type TSchema, Type } from 'typebox';
export {
  ConfigError,
  type ConfigIssue,
  type ConfigSource,
  formatConfigError,
  type LoadConfigOptions,
  loadTomlConfig,
  readToml,
  writeToml,
} from './config.ts';
export {
  classifyError,
  type DefinedErrors,
  defineErrors,
  type EnvelopeResponse,
  type ErrorCodeInfo,
  type ErrorDefinition,
  ErrorEnvelope,
  type ErrorEnvelopeFactory,
  ErrorEnvelopeSchema,
  type ErrorFactory,
  type ErrorInfo,
  type ErrorTable,
  KitErrors,
  listErrors,
  ServiceError,
  type ServiceErrorOptions,
  type ValidationInfo,
  type ValidationIssue,
} from './errors.ts';
export {
  HttpClient,
  type HttpClientOptions,
  type HttpReply,
  HttpReplyTooLargeError,
  type HttpRequestOptions,
  HttpTimeoutError,
} from './http-client.ts';
export {
  type ClientErrorLike,
  clientErrorInfo,
  DEFAULT_HTTP_TIMEOUTS,
  DEFAULT_JSON_MAX_DEPTH,
  type HttpTimeouts,
  installJsonDepthGuard,
  resolveHttpTimeouts,
  setHttpTimeouts,
} from './http-guards.ts';
export {
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  type RunningService,
  type RunServiceOptions,
  runService,
  type ServiceAddress,
} from './lifecycle.ts';
export { type CreateLoggerOptions, createLogger, type Logger, REDACT_PATHS } from './logger.ts';
export { announceListening, parseCommandLine, type RunMainOptions, runMain, UsageError } from './main.ts';
export {
  LATENCY_BUCKETS,
  type MetricsConfig,
  MetricsConfigSchema,
  type MetricsServer,
  ServiceMetrics,
  serveMetrics,
  startMetricsServer,
} from './metrics.ts';
export { type PidLock, pidAlive, takePidLock } from './pid-lock.ts';
export {
  CounterSeries,
  collectProcessMetrics,
  type ExportedMetric,
  HistogramSeries,
  PlainCounter,
  PlainHistogram,
  registerPlain,
} from './plain-metrics.ts';
export { freePort, isListening, waitFor } from './ports.ts';
export { installJsonParser } from './raw-body.ts';
export { SealedBox, SealedBoxError, type SealedBoxFailure, type SealedBoxOptions } from './sealed-box.ts';
export {
  type CreateServerOptions,
  createServer,
  DEFAULT_BODY_LIMIT,
  DEFAULT_SWAGGER_PREFIX,
  isSaneRequestId,
  type ServiceApp,
  type SwaggerOptions,
  sendEnvelope,
} from './server.ts';
export { type PoolThread, siblingModule, ThreadPool, type ThreadPoolOptions } from './thread-pool.ts';
export { DUMMY_DIGEST, digestsEqual, mintToken, parseToken, sha256, type TokenScheme } from './tokens.ts';
