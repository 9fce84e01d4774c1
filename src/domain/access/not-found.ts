// The NotFound errors of the access context, each defined once. Commands
// answer them both for a resource that does not exist and for one the caller
// may not know of (see `hidden` in permissions.ts), so ids cannot be probed.
import { notFound } from "../errors.js";

export { orgNotFound } from "../orgs/orgs.js";
export const projectNotFound = () => notFound("Errors.Project.NotFound", "project not found");
export const roleNotFound = () => notFound("Errors.Project.Role.NotFound", "project role not found");
export const projectGrantNotFound = () => notFound("Errors.Project.Grant.NotFound", "project grant not found");
/** A user grant in the name of an organization the project is not granted to. */
export const projectNotGranted = () => notFound("Errors.Project.Grant.NotFound", "the project is not granted to the organization");
export const userGrantNotFound = () => notFound("Errors.UserGrant.NotFound", "user grant not found");
export const appNotFound = () => notFound("Errors.App.NotFound", "application not found");
export const appKeyNotFound = () => notFound("Errors.App.Key.NotFound", "application key not found");
