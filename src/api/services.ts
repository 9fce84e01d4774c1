// The services of the resource API served by the Connect router (and, through it, the REST transcoder).
import type { DescService } from "@bufbuild/protobuf";
import { ActionService } from "../../gen/svc/action/v2/action_service_pb.js";
import { ApplicationService } from "../../gen/svc/app/v2/app_service_pb.js";
import { AuthorizationService } from "../../gen/svc/authorization/v2/authorization_service_pb.js";
import { EventService } from "../../gen/svc/event/v2/event_service_pb.js";
import { IdentityProviderService } from "../../gen/svc/idp/v2/idp_service_pb.js";
import { InstanceService } from "../../gen/svc/instance/v2/instance_service_pb.js";
import { OIDCService } from "../../gen/svc/oidc/v2/oidc_service_pb.js";
import { OrganizationService } from "../../gen/svc/org/v2/org_service_pb.js";
import { ProjectService } from "../../gen/svc/project/v2/project_service_pb.js";
import { SAMLService } from "../../gen/svc/saml/v2/saml_service_pb.js";
import { SessionService } from "../../gen/svc/session/v2/session_service_pb.js";
import { MailTextService } from "../../gen/svc/settings/v2/mail_text_service_pb.js";
import { SettingsService } from "../../gen/svc/settings/v2/settings_service_pb.js";
import { UserService } from "../../gen/svc/user/v2/user_service_pb.js";

/** The services of the resource API, in the order reflection and health list them. */
export const API_SERVICES: DescService[] = [
  UserService,
  OrganizationService,
  InstanceService,
  SettingsService,
  MailTextService,
  EventService,
  ProjectService,
  AuthorizationService,
  ApplicationService,
  OIDCService,
  SAMLService,
  SessionService,
  IdentityProviderService,
  ActionService,
];
