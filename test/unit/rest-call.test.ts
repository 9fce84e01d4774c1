// The test-side REST helper derives method, path and body from the protos'
// google.api.http rules: check it on each rule shape the services use.
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "@jest/globals";
import { OrganizationService } from "../../gen/svc/org/v2/org_service_pb.js";
import { GetUserByIDRequestSchema, UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { restCall, rpcMethod, SERVICES } from "../support/rest.js";

describe("restCall", () => {
  it("puts the rest of a body:* request into the body, path fields URL-encoded", () => {
    expect(restCall(OrganizationService, "UpdateOrganization", { organizationId: "a/b c", name: "N" })).toEqual({
      httpMethod: "POST",
      path: "/v2/organizations/a%2Fb%20c",
      body: { name: "N" },
    });
  });

  it("sends the rest of a bodyless request as query parameters, repeated ones repeated", () => {
    expect(restCall(OrganizationService, "DeleteOrganizationMetadata", { organizationId: "o", keys: ["x", "y z"] })).toEqual({
      httpMethod: "DELETE",
      path: "/v2/organizations/o/metadata?keys=x&keys=y%20z",
      body: undefined,
    });
  });

  it("takes a request message as well as its JSON", () => {
    const req = create(GetUserByIDRequestSchema, { userId: "u1" });
    expect(restCall(UserService, "GetUserByID", req)).toEqual({ httpMethod: "GET", path: "/v2/users/u1", body: undefined });
  });

  it("knows every RPC of every service by name", () => {
    for (const service of SERVICES) {
      for (const method of service.methods) {
        expect(rpcMethod(method.name as never)).toBe(method);
        expect(restCall(service, method).path.startsWith("/v2/")).toBe(true);
      }
    }
  });

  it("refuses a method of another service", () => {
    expect(() => restCall(UserService, "UpdateOrganization")).toThrow(/not a method/);
  });
});
