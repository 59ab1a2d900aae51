// The reading moved to src/pulsar/ (issue 32); src/http/plugins still imports it from here.
export { readBrokerLimits, type BrokerLimits } from '../pulsar/broker-limits.js';
