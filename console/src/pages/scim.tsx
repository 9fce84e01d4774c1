// SCIM provisioning of an organization: the tenant URL a provisioner (Entra ID, Okta...) is given, and a service
// account for it: a machine user of the organization with ORG_USER_MANAGER and a token, shown once.
import { createClient } from "@connectrpc/connect";
import { Button, Text } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { OrganizationService } from "../../../gen/svc/org/v2/org_service_pb";
import { UserService } from "../../../gen/svc/user/v2/user_service_pb";
import { settings } from "../config";
import { useI18n } from "../i18n";
import { transport } from "../transport";
import { ApiError, CardSection, SecretValue, ShownOnce } from "../ui";

export function ScimCard({ orgId }: { orgId: string }) {
  const { t } = useI18n();
  const client = useQueryClient();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [account, setAccount] = useState<{ username: string; token: string }>();
  const tenantUrl = `${settings.issuer.replace(/\/+$/, "")}/scim/v2/${orgId}`;
  const create = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const users = createClient(UserService, transport);
      const username = `scim-provisioner-${crypto.getRandomValues(new Uint32Array(1))[0]?.toString(36)}`;
      const { id } = await users.createUser({
        organizationId: orgId,
        username,
        userType: { case: "machine", value: { name: "SCIM provisioning", description: "Created in the console for a SCIM provisioner" } },
      });
      await createClient(OrganizationService, transport).addOrganizationMember({ organizationId: orgId, userId: id, roles: ["ORG_USER_MANAGER"] });
      const { token } = await users.addPersonalAccessToken({ userId: id });
      setAccount({ username, token });
      await client.invalidateQueries();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <CardSection title={t("scim.title")}>
      <Text size="sm">{t("scim.hint")}</Text>
      <SecretValue label={t("scim.tenantUrl")} value={tenantUrl} />
      {account ? (
        <ShownOnce label={t("scim.token")} value={account.token} note={t("scim.tokenOnce", { name: account.username })} />
      ) : (
        <Button onClick={() => void create()} loading={busy} w="fit-content">
          {t("scim.create")}
        </Button>
      )}
      <ApiError error={error} />
    </CardSection>
  );
}
