// A person's sign-in methods as an administrator sees them: the types set up (ListAuthenticationMethodTypes), the
// passkeys, the TOTP app, one-time codes by e-mail and external identity provider links, each removable after
// confirmation. An administrator removes another user's factor by its own permission (user.authn.write in the
// user's organization and the "who may change an account" rule); the API refuses what the roles do not allow, and
// the console shows its message. Registering a factor is the user's own business (the hosted login's account page).
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { Badge, Group, Table, Text, VisuallyHidden } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { AuthenticationMethodType, AuthFactorState } from "../../../gen/svc/user/v2/authn_pb";
import { UserService } from "../../../gen/svc/user/v2/user_service_pb";
import { type MessageKey, useI18n } from "../i18n";
import { ApiError, CardSection, ConfirmButton, EmptyState, useDateFormat } from "../ui";
import { toDate } from "./dates";

const METHOD_LABEL: Record<AuthenticationMethodType, MessageKey> = {
  [AuthenticationMethodType.UNSPECIFIED]: "state.unspecified",
  [AuthenticationMethodType.PASSWORD]: "mfa.password",
  [AuthenticationMethodType.PASSKEY]: "mfa.passkey",
  [AuthenticationMethodType.IDP]: "mfa.idp",
  [AuthenticationMethodType.TOTP]: "mfa.totp",
  [AuthenticationMethodType.U2F]: "mfa.u2f",
  [AuthenticationMethodType.OTP_SMS]: "mfa.otpSms",
  [AuthenticationMethodType.OTP_EMAIL]: "mfa.otpEmail",
};

interface Row {
  key: string;
  kind: string;
  name: string;
  detail: string;
  remove?: () => Promise<unknown>;
}

export function MfaCard({ userId, readOnly }: { userId: string; readOnly: boolean }) {
  const { t } = useI18n();
  const date = useDateFormat();
  const client = useQueryClient();
  const refresh = { onSuccess: () => client.invalidateQueries() };
  const types = useQuery(UserService.method.listAuthenticationMethodTypes, { userId });
  const passkeys = useQuery(UserService.method.listPasskeys, { userId });
  const links = useQuery(UserService.method.listIDPLinks, { userId, query: { limit: 100 } });
  const removeTotp = useMutation(UserService.method.removeTOTP, refresh);
  const removeOtpEmail = useMutation(UserService.method.removeOTPEmail, refresh);
  const removePasskey = useMutation(UserService.method.removePasskey, refresh);
  const removeLink = useMutation(UserService.method.removeIDPLink, refresh);
  const has = (m: AuthenticationMethodType) => types.data?.authMethodTypes.includes(m) ?? false;
  const rows: Row[] = [];
  if (has(AuthenticationMethodType.TOTP)) {
    rows.push({ key: "totp", kind: t("mfa.totp"), name: t("mfa.totpName"), detail: "", remove: () => removeTotp.mutateAsync({ userId }) });
  }
  if (has(AuthenticationMethodType.OTP_EMAIL)) {
    rows.push({ key: "otp-email", kind: t("mfa.otpEmail"), name: t("mfa.otpEmailName"), detail: "", remove: () => removeOtpEmail.mutateAsync({ userId }) });
  }
  for (const p of passkeys.data?.result ?? []) {
    const last = toDate(p.lastUsedDate);
    rows.push({
      key: `passkey-${p.id}`,
      kind: t("mfa.passkey"),
      name: p.name || p.id,
      detail: [
        p.state === AuthFactorState.READY ? "" : t("mfa.notReady"),
        t("mfa.added", { date: date(toDate(p.creationDate)) }),
        last ? t("mfa.lastUsed", { date: date(last) }) : "",
      ]
        .filter(Boolean)
        .join(" · "),
      remove: () => removePasskey.mutateAsync({ userId, passkeyId: p.id }),
    });
  }
  for (const l of links.data?.result ?? []) {
    rows.push({
      key: `idp-${l.idpId}-${l.userId}`,
      kind: t("mfa.idp"),
      name: l.userName || l.userId,
      detail: l.idpId,
      remove: () => removeLink.mutateAsync({ userId, idpId: l.idpId, linkedUserId: l.userId }),
    });
  }
  const loaded = types.data && passkeys.data && links.data;
  return (
    <CardSection title={t("mfa.title")}>
      <ApiError error={types.error ?? passkeys.error ?? links.error} />
      {types.data && (
        <Group gap={4} aria-label={t("mfa.types")} data-testid="method-types">
          {types.data.authMethodTypes.length === 0 && <Text size="sm">{t("mfa.noTypes")}</Text>}
          {types.data.authMethodTypes.map((m) => (
            <Badge key={m} variant="default">
              {t(METHOD_LABEL[m])}
            </Badge>
          ))}
        </Group>
      )}
      {loaded && rows.length === 0 && <EmptyState title={t("mfa.empty")} hint={t("mfa.emptyHint")} />}
      {rows.length > 0 && (
        <Table.ScrollContainer minWidth={300}>
          <Table data-testid="mfa-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("mfa.kind")}</Table.Th>
                <Table.Th>{t("users.name")}</Table.Th>
                {!readOnly && (
                  <Table.Th>
                    <VisuallyHidden>{t("action.delete")}</VisuallyHidden>
                  </Table.Th>
                )}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((r) => (
                <Table.Tr key={r.key}>
                  <Table.Td>{r.kind}</Table.Td>
                  <Table.Td>
                    <Text size="sm">{r.name}</Text>
                    {r.detail && (
                      <Text size="xs" c="dimmed">
                        {r.detail}
                      </Text>
                    )}
                  </Table.Td>
                  {!readOnly && r.remove && (
                    <Table.Td>
                      <ConfirmButton
                        size="xs"
                        label={t("mfa.remove")}
                        ariaLabel={t("mfa.removeOf", { name: `${r.kind} ${r.name}` })}
                        title={t("mfa.removeTitle")}
                        body={t("mfa.removeBody", { name: `${r.kind}: ${r.name}` })}
                        confirmLabel={t("mfa.remove")}
                        onConfirm={r.remove}
                      />
                    </Table.Td>
                  )}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </CardSection>
  );
}
