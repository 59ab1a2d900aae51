/**
 * The package's public API: build the registry app in-process, and write tool services in
 * TypeScript against the same wire contract as the reference Python base class.
 */
export { buildApp } from './http/app.js';
export { loadConfig, defaultConfig, type Config } from './config.js';
export {
  runToolService,
  type ToolHandler,
  type ToolServiceOptions,
  type RunningToolService,
  type ToolServiceLogger,
  type ToolServiceState,
  type ToolServiceAnnouncement,
} from './toolkit/tool-service.js';
export { PulsarWsClient, type PulsarWsOptions, type BusRequest } from './bridge/pulsar-ws.js';
