// "What are you building?": the kind of application picks the grant types and the client authentication (a SPA or
// a native app is a public client with PKCE, a server-side web app has a secret, a machine uses client
// credentials); http://localhost redirect URIs are accepted in development mode, with a note; the secret is shown
// once; the last step is configuration to paste into openid-client, Auth.js or Spring Security.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { useMutation } from "@connectrpc/connect-query";
import { Alert, Button, Code, CopyButton, Group, Radio, SimpleGrid, Stack, Stepper, Tabs, Text, TextInput } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { AccessTokenType, ApiAuthMethodType, OidcAppType, OidcAuthMethodType, OidcGrantType, OidcResponseType } from "../../../gen/svc/app/v2/app_pb";
import { ApplicationService, type CreateApplicationRequestSchema } from "../../../gen/svc/app/v2/app_service_pb";
import { settings } from "../config";
import { type MessageKey, useI18n } from "../i18n";
import { ApiError, PageHeader, SecretValue } from "../ui";

type Kind = "spa" | "web" | "native" | "machine";

const KINDS: { kind: Kind; title: MessageKey; hint: MessageKey; redirect: string; logout: string }[] = [
  { kind: "spa", title: "apps.spa", hint: "apps.spaHint", redirect: "http://localhost:5173/callback", logout: "http://localhost:5173/" },
  { kind: "web", title: "apps.web", hint: "apps.webHint", redirect: "http://localhost:3000/api/auth/callback/svc", logout: "http://localhost:3000/" },
  { kind: "native", title: "apps.native", hint: "apps.nativeHint", redirect: "http://127.0.0.1/callback", logout: "" },
  { kind: "machine", title: "apps.machine", hint: "apps.machineHint", redirect: "", logout: "" },
];

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** http redirect URIs need development mode, except loopback ones of native apps (RFC 8252). */
function needsDevMode(kind: Kind, uris: string[]): boolean {
  return uris.some((u) => {
    try {
      const url = new URL(u);
      return url.protocol === "http:" && !(kind === "native" && LOOPBACK.has(url.hostname));
    } catch {
      return false;
    }
  });
}

interface Created {
  clientId: string;
  clientSecret: string;
}

function Snippet({ code }: { code: string }) {
  const { t } = useI18n();
  return (
    <Stack gap="xs">
      <Code block style={{ whiteSpace: "pre-wrap", wordBreak: "break-all" }}>
        {code}
      </Code>
      <CopyButton value={code}>
        {({ copied, copy }) => (
          <Button variant="default" size="xs" onClick={copy} w="fit-content">
            {copied ? t("action.copied") : t("action.copy")}
          </Button>
        )}
      </CopyButton>
    </Stack>
  );
}

function snippets(kind: Kind, projectId: string, c: Created, redirect: string): { openid: string; authjs?: string; spring?: string } {
  const issuer = settings.issuer.replace(/\/+$/, "");
  const secretArg = c.clientSecret ? JSON.stringify(c.clientSecret) : "undefined, client.None()";
  if (kind === "machine") {
    return {
      openid: `import * as client from "openid-client";

const config = await client.discovery(new URL("${issuer}"), "${c.clientId}", ${JSON.stringify(c.clientSecret)});
const tokens = await client.clientCredentialsGrant(config, {
  scope: "urn:svc:iam:org:project:id:${projectId}:aud",
});`,
    };
  }
  return {
    openid: `import * as client from "openid-client";

const config = await client.discovery(new URL("${issuer}"), "${c.clientId}", ${secretArg});
const code_verifier = client.randomPKCECodeVerifier();
const url = client.buildAuthorizationUrl(config, {
  redirect_uri: "${redirect}",
  scope: "openid profile email",
  code_challenge: await client.calculatePKCECodeChallenge(code_verifier),
  code_challenge_method: "S256",
});
// …and at ${redirect}:
const tokens = await client.authorizationCodeGrant(config, currentUrl, { pkceCodeVerifier: code_verifier });`,
    authjs: `// auth.ts (Auth.js / NextAuth v5)
import NextAuth from "next-auth";

export const { handlers, auth, signIn, signOut } = NextAuth({
  providers: [
    {
      id: "svc",
      name: "svc",
      type: "oidc",
      issuer: "${issuer}",
      clientId: "${c.clientId}",${c.clientSecret ? `\n      clientSecret: "${c.clientSecret}",` : `\n      client: { token_endpoint_auth_method: "none" },`}
      checks: ["pkce", "state"],
    },
  ],
});`,
    spring: `# application.yml (Spring Security OAuth 2.0 Client)
spring:
  security:
    oauth2:
      client:
        registration:
          svc:
            client-id: ${c.clientId}${c.clientSecret ? `\n            client-secret: ${c.clientSecret}` : "\n            client-authentication-method: none"}
            authorization-grant-type: authorization_code
            scope: openid,profile,email
            redirect-uri: "{baseUrl}/login/oauth2/code/{registrationId}"
        provider:
          svc:
            issuer-uri: ${issuer}`,
  };
}

export default function AppWizard({ params }: { params: string[] }) {
  const projectId = params[0] as string;
  const { t } = useI18n();
  const client = useQueryClient();
  const create = useMutation(ApplicationService.method.createApplication);
  const [step, setStep] = useState(0);
  const [kind, setKind] = useState<Kind>("spa");
  const spec = KINDS.find((k) => k.kind === kind) ?? (KINDS[0] as (typeof KINDS)[number]);
  const [name, setName] = useState("");
  const [redirect, setRedirect] = useState(spec.redirect);
  const [logout, setLogout] = useState(spec.logout);
  const [created, setCreated] = useState<Created>();
  const uris = [redirect, logout].filter(Boolean);
  const devMode = kind !== "machine" && needsDevMode(kind, uris);

  const choose = (k: Kind) => {
    const s = KINDS.find((x) => x.kind === k);
    setKind(k);
    setRedirect(s?.redirect ?? "");
    setLogout(s?.logout ?? "");
  };

  const submit = async () => {
    const config: MessageInitShape<typeof CreateApplicationRequestSchema>["config"] =
      kind === "machine"
        ? { case: "api", value: { authMethodType: ApiAuthMethodType.BASIC, accessTokenType: AccessTokenType.BEARER } }
        : {
            case: "oidc",
            value: {
              appType: kind === "spa" ? OidcAppType.USER_AGENT : kind === "native" ? OidcAppType.NATIVE : OidcAppType.WEB,
              authMethodType: kind === "web" ? OidcAuthMethodType.BASIC : OidcAuthMethodType.NONE,
              grantTypes: [OidcGrantType.AUTHORIZATION_CODE, OidcGrantType.REFRESH_TOKEN],
              responseTypes: [OidcResponseType.CODE],
              redirectUris: [redirect],
              postLogoutRedirectUris: logout ? [logout] : [],
              accessTokenType: AccessTokenType.BEARER,
              idTokenUserinfoAssertion: true,
              devMode,
            },
          };
    const res = await create.mutateAsync({ projectId, name, config });
    await client.invalidateQueries();
    setCreated({ clientId: res.clientId, clientSecret: res.clientSecret });
    setStep(2);
  };

  const code = created ? snippets(kind, projectId, created, redirect) : undefined;
  return (
    <>
      <PageHeader title={t("apps.new")} back={{ to: `/projects/${encodeURIComponent(projectId)}`, label: t("projects.project") }} />
      <Stepper active={step} onStepClick={(s) => !created && s < step && setStep(s)} allowNextStepsSelect={false} size="sm">
        <Stepper.Step label={t("apps.stepKind")}>
          <Radio.Group value={kind} onChange={(v) => choose(v as Kind)} label={t("apps.question")} mt="md">
            <SimpleGrid cols={{ base: 1, sm: 2 }} mt="sm">
              {KINDS.map((k) => (
                <Radio.Card key={k.kind} value={k.kind} p="md" radius="md" aria-label={t(k.title)}>
                  <Group wrap="nowrap" align="flex-start">
                    <Radio.Indicator />
                    <div>
                      <Text fw={600}>{t(k.title)}</Text>
                      <Text size="sm" c="dimmed">
                        {t(k.hint)}
                      </Text>
                    </div>
                  </Group>
                </Radio.Card>
              ))}
            </SimpleGrid>
          </Radio.Group>
          <Group mt="lg">
            <Button onClick={() => setStep(1)}>{t("apps.next")}</Button>
          </Group>
        </Stepper.Step>
        <Stepper.Step label={t("apps.stepSettings")}>
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void submit().catch(() => undefined);
            }}
          >
            <Stack maw={560} mt="md">
              <TextInput label={t("apps.name")} value={name} onChange={(e) => setName(e.currentTarget.value)} required />
              {kind !== "machine" && (
                <>
                  <TextInput label={t("apps.redirectUri")} value={redirect} onChange={(e) => setRedirect(e.currentTarget.value)} required />
                  <TextInput label={t("apps.logoutUri")} value={logout} onChange={(e) => setLogout(e.currentTarget.value)} />
                  {devMode && (
                    <Alert color="yellow" title={t("apps.devModeTitle")}>
                      {t("apps.devModeNote")}
                    </Alert>
                  )}
                </>
              )}
              <Text size="sm" c="dimmed">
                {t(kind === "machine" ? "apps.summaryMachine" : kind === "web" ? "apps.summaryWeb" : "apps.summaryPublic")}
              </Text>
              <ApiError error={create.error} />
              <Group>
                <Button variant="default" onClick={() => setStep(0)}>
                  {t("apps.back")}
                </Button>
                <Button type="submit" loading={create.isPending}>
                  {t("action.create")}
                </Button>
              </Group>
            </Stack>
          </form>
        </Stepper.Step>
        <Stepper.Step label={t("apps.stepDone")}>
          {created && code && (
            <Stack mt="md">
              <SecretValue label={t("apps.clientId")} value={created.clientId} />
              {created.clientSecret && (
                <>
                  <SecretValue label={t("apps.clientSecret")} value={created.clientSecret} />
                  <Alert color="orange" title={t("apps.secretOnceTitle")}>
                    {t("apps.secretOnce")}
                  </Alert>
                </>
              )}
              <Tabs defaultValue="openid">
                <Tabs.List>
                  <Tabs.Tab value="openid">openid-client</Tabs.Tab>
                  {code.authjs && <Tabs.Tab value="authjs">Auth.js</Tabs.Tab>}
                  {code.spring && <Tabs.Tab value="spring">Spring Security</Tabs.Tab>}
                </Tabs.List>
                <Tabs.Panel value="openid" pt="sm">
                  <Snippet code={code.openid} />
                </Tabs.Panel>
                {code.authjs && (
                  <Tabs.Panel value="authjs" pt="sm">
                    <Snippet code={code.authjs} />
                  </Tabs.Panel>
                )}
                {code.spring && (
                  <Tabs.Panel value="spring" pt="sm">
                    <Snippet code={code.spring} />
                  </Tabs.Panel>
                )}
              </Tabs>
            </Stack>
          )}
        </Stepper.Step>
      </Stepper>
    </>
  );
}
