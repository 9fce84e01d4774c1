// The OrganizationService and InstanceService tests' support: the shared
// call helper (rpc.ts) and the org fixtures (fixtures.ts), under the names
// those tests import.
export { addMember, createOrg, defaultOrgId, type Machine, machine, type World, world } from "./fixtures.js";
export { call, fails, ok, type Reply, type Rpc, VIAS, type Via } from "./rpc.js";
