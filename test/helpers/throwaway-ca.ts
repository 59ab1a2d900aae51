/** The throwaway CA the OpenAPI bench makes too (bench/throwaway-ca.ts): one maker for tests and bench. */
export { throwawayCa, type ThrowawayCa } from '../../bench/throwaway-ca.js';
