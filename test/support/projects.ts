// The ProjectService, AuthorizationService and ApplicationService tests'
// support: the shared call helper (rpc.ts) and the project fixtures
// (fixtures.ts), under the names those tests import.
export { type ProjectWorld, project, projectWorld, sorted } from "./fixtures.js";
export { call, fails, type Json, ok, type Reply, type Rpc, VIAS, type Via } from "./rpc.js";
