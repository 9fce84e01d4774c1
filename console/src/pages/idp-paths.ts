// Where the providers of the instance (no `orgId`) or of an organization are listed, and their pages' paths.
export function idpBase(orgId: string | undefined): { list: string; base: string } {
  return orgId ? { list: `/orgs/${encodeURIComponent(orgId)}?tab=idps`, base: `/orgs/${encodeURIComponent(orgId)}/idps` } : { list: "/idps", base: "/idps" };
}
