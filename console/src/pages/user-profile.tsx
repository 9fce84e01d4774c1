// A user's profile and contact data as an administrator edits them (UpdateUser): a person's names, language and
// username; a service account's name, description and token type; e-mail (verified or not, a new code sent, a code
// entered) and phone (changed, marked verified, removed, or verified with a code an administrator creates).
import { useMutation } from "@connectrpc/connect-query";
import { Badge, Button, Checkbox, Group, Select, SimpleGrid, Stack, Text, TextInput, Title } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { AccessTokenType, type HumanUser, type MachineUser, type User } from "../../../gen/svc/user/v2/user_pb";
import { UserService } from "../../../gen/svc/user/v2/user_service_pb";
import { InlineForm, SaveRow } from "../fields";
import { useI18n } from "../i18n";
import { ApiError, SecretValue, TitledCard } from "../ui";

function useRefresh() {
  const client = useQueryClient();
  return { onSuccess: () => client.invalidateQueries() };
}

function Saved({ show }: { show: boolean }) {
  const { t } = useI18n();
  return show ? (
    <Text size="sm" c="teal.9" role="status">
      {t("profile.saved")}
    </Text>
  ) : null;
}

/** Spread on a text input for field `k` of a form's state: disabled when read only; a change clears the last save's status. */
function textFields<F extends Record<string, string>>(f: F, setF: (f: F) => void, readOnly: boolean, reset: () => void) {
  return (k: keyof F) => ({
    value: f[k],
    disabled: readOnly,
    onChange: (e: React.ChangeEvent<HTMLInputElement>) => {
      reset();
      setF({ ...f, [k]: e.currentTarget.value });
    },
  });
}

function HumanProfileForm({ user, human, readOnly }: { user: User; human: HumanUser; readOnly: boolean }) {
  const { t } = useI18n();
  const update = useMutation(UserService.method.updateUser, useRefresh());
  const p = human.profile;
  const [f, setF] = useState({
    username: user.username,
    givenName: p?.givenName ?? "",
    familyName: p?.familyName ?? "",
    nickName: p?.nickName ?? "",
    displayName: p?.displayName ?? "",
    preferredLanguage: p?.preferredLanguage ?? "",
  });
  const field = textFields(f, setF, readOnly, update.reset);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    update.mutate({
      userId: user.userId,
      ...(f.username !== user.username ? { username: f.username } : {}),
      userType: {
        case: "human",
        value: {
          profile: {
            givenName: f.givenName,
            familyName: f.familyName,
            nickName: f.nickName,
            displayName: f.displayName,
            preferredLanguage: f.preferredLanguage,
          },
        },
      },
    });
  };
  return (
    <form onSubmit={submit}>
      <Stack gap="sm">
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput label={t("users.givenName")} required {...field("givenName")} />
          <TextInput label={t("users.familyName")} required {...field("familyName")} />
          <TextInput label={t("profile.displayName")} {...field("displayName")} />
          <TextInput label={t("profile.nickName")} {...field("nickName")} />
          <TextInput label={t("users.username")} required {...field("username")} />
          <TextInput label={t("profile.language")} description={t("profile.languageHint")} {...field("preferredLanguage")} />
        </SimpleGrid>
        <SaveRow error={update.error} canWrite={!readOnly} saving={update.isPending} label={t("profile.save")}>
          <Saved show={update.isSuccess} />
        </SaveRow>
      </Stack>
    </form>
  );
}

function MachineProfileForm({ user, machine, readOnly }: { user: User; machine: MachineUser; readOnly: boolean }) {
  const { t } = useI18n();
  const update = useMutation(UserService.method.updateUser, useRefresh());
  const [f, setF] = useState({ username: user.username, name: machine.name, description: machine.description });
  const [tokenType, setTokenType] = useState(String(machine.accessTokenType || AccessTokenType.BEARER));
  const field = textFields(f, setF, readOnly, update.reset);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        update.mutate({
          userId: user.userId,
          ...(f.username !== user.username ? { username: f.username } : {}),
          userType: { case: "machine", value: { name: f.name, description: f.description, accessTokenType: Number(tokenType) as AccessTokenType } },
        });
      }}
    >
      <Stack gap="sm">
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          <TextInput label={t("users.machineName")} required {...field("name")} />
          <TextInput label={t("users.username")} required {...field("username")} />
          <TextInput label={t("users.description")} {...field("description")} />
          <Select
            label={t("profile.tokenType")}
            value={tokenType}
            disabled={readOnly}
            onChange={(v) => v && setTokenType(v)}
            allowDeselect={false}
            data={[
              { value: String(AccessTokenType.BEARER), label: t("profile.tokenBearer") },
              { value: String(AccessTokenType.JWT), label: t("profile.tokenJwt") },
            ]}
          />
        </SimpleGrid>
        <SaveRow error={update.error} canWrite={!readOnly} saving={update.isPending} label={t("profile.save")}>
          <Saved show={update.isSuccess} />
        </SaveRow>
      </Stack>
    </form>
  );
}

export function ProfileCard({ user, readOnly }: { user: User; readOnly: boolean }) {
  const { t } = useI18n();
  return (
    <TitledCard title={t("profile.title")}>
      {user.type.case === "human" && (
        <HumanProfileForm key={String(user.details?.changeDate?.seconds ?? 0n)} user={user} human={user.type.value} readOnly={readOnly} />
      )}
      {user.type.case === "machine" && <MachineProfileForm user={user} machine={user.type.value} readOnly={readOnly} />}
    </TitledCard>
  );
}

function VerifiedBadge({ verified }: { verified: boolean }) {
  const { t } = useI18n();
  return (
    <Badge variant="filled" autoContrast color={verified ? "teal.9" : "gray.7"} data-testid="verified-badge">
      {t(verified ? "contact.verified" : "contact.unverified")}
    </Badge>
  );
}

function EmailSection({ userId, human, readOnly }: { userId: string; human: HumanUser; readOnly: boolean }) {
  const { t } = useI18n();
  const refresh = useRefresh();
  const update = useMutation(UserService.method.updateUser, refresh);
  const send = useMutation(UserService.method.sendEmailCode);
  const verify = useMutation(UserService.method.verifyEmail, refresh);
  const [email, setEmail] = useState(human.email?.email ?? "");
  const [verified, setVerified] = useState(false);
  const isVerified = human.email?.isVerified ?? false;
  return (
    <Stack gap="sm">
      <Group gap="xs">
        <Title order={3} size="h5">
          {t("users.email")}
        </Title>
        <VerifiedBadge verified={isVerified} />
      </Group>
      <Text size="sm">{human.email?.email}</Text>
      {!readOnly && (
        <>
          <InlineForm
            onSubmit={() => {
              update.mutate({ userId, userType: { case: "human", value: { email: { email, isVerified: verified } } } });
            }}
            error={update.error}
          >
            <TextInput
              label={t("contact.newEmail")}
              type="email"
              value={email}
              onChange={(e) => setEmail(e.currentTarget.value)}
              required
              style={{ flex: "1 1 220px" }}
            />
            <Checkbox label={t("contact.markVerified")} checked={verified} onChange={(e) => setVerified(e.currentTarget.checked)} mb={8} />
            <Button type="submit" variant="default" loading={update.isPending}>
              {t("contact.changeEmail")}
            </Button>
          </InlineForm>
          {!isVerified && (
            <>
              <Group>
                <Button variant="default" loading={send.isPending} onClick={() => send.mutate({ userId, verification: { case: "sendCode", value: {} } })}>
                  {t("contact.sendCode")}
                </Button>
                {send.isSuccess && (
                  <Text size="sm" role="status">
                    {t("contact.codeSent")}
                  </Text>
                )}
              </Group>
              <ApiError error={send.error} />
              <CodeForm label={t("contact.code")} hint={t("contact.codeHint")} button={t("contact.verify")} userId={userId} verify={verify} />
            </>
          )}
        </>
      )}
    </Stack>
  );
}

/** A verification code entered, and its button: `verify` checks it for `userId`; the field is emptied once accepted. */
function CodeForm(props: {
  label: string;
  hint?: string;
  button: string;
  userId: string;
  verify: {
    isPending: boolean;
    error: unknown;
    mutate(r: { userId: string; verificationCode: string }, o: { onSuccess(): void }): void;
  };
}) {
  const [code, setCode] = useState("");
  const { verify } = props;
  return (
    <InlineForm onSubmit={() => verify.mutate({ userId: props.userId, verificationCode: code.trim() }, { onSuccess: () => setCode("") })} error={verify.error}>
      <TextInput
        label={props.label}
        description={props.hint}
        value={code}
        onChange={(e) => setCode(e.currentTarget.value)}
        required
        autoComplete="one-time-code"
        style={{ flex: "1 1 220px" }}
      />
      <Button type="submit" variant="default" loading={verify.isPending}>
        {props.button}
      </Button>
    </InlineForm>
  );
}

/**
 * Verification by code (svc sends no SMS): an administrator with user.authn.write creates a code and gives it to the
 * user; the code is entered here (or by the user, through the API).
 */
function PhoneCode({ userId, canCode }: { userId: string; canCode: boolean }) {
  const { t } = useI18n();
  const send = useMutation(UserService.method.sendPhoneCode);
  const verify = useMutation(UserService.method.verifyPhone, useRefresh());
  return (
    <>
      {canCode && (
        <Group>
          <Button variant="default" loading={send.isPending} onClick={() => send.mutate({ userId })}>
            {t("contact.phoneCode")}
          </Button>
        </Group>
      )}
      {send.data && <SecretValue label={t("contact.phoneCodeValue")} value={send.data.verificationCode} />}
      <ApiError error={send.error} />
      <CodeForm label={t("contact.phoneCodeEnter")} button={t("contact.verifyPhone")} userId={userId} verify={verify} />
    </>
  );
}

function PhoneSection({ userId, human, readOnly, canCode }: { userId: string; human: HumanUser; readOnly: boolean; canCode: boolean }) {
  const { t } = useI18n();
  const update = useMutation(UserService.method.updateUser, useRefresh());
  const [phone, setPhone] = useState(human.phone?.phone ?? "");
  const [verified, setVerified] = useState(human.phone?.isVerified ?? false);
  const current = human.phone?.phone;
  const save = (value: string, isVerified: boolean) =>
    update.mutate({ userId, userType: { case: "human", value: { phone: { phone: value, isVerified: value ? isVerified : false } } } });
  return (
    <Stack gap="sm">
      <Group gap="xs">
        <Title order={3} size="h5">
          {t("users.phone")}
        </Title>
        {current && <VerifiedBadge verified={human.phone?.isVerified ?? false} />}
      </Group>
      <Text size="sm">{current || t("contact.noPhone")}</Text>
      {!readOnly && (
        <InlineForm
          onSubmit={() => {
            save(phone.trim(), verified);
          }}
          error={update.error}
        >
          <TextInput
            label={t("contact.newPhone")}
            description={t("contact.phoneHint")}
            type="tel"
            value={phone}
            onChange={(e) => setPhone(e.currentTarget.value)}
            style={{ flex: "1 1 220px" }}
          />
          <Checkbox label={t("contact.markVerified")} checked={verified} onChange={(e) => setVerified(e.currentTarget.checked)} mb={8} />
          <Button type="submit" variant="default" loading={update.isPending}>
            {t("contact.changePhone")}
          </Button>
          {current && (
            <Button
              variant="outline"
              color="red.9"
              onClick={() => {
                setPhone("");
                save("", false);
              }}
            >
              {t("contact.removePhone")}
            </Button>
          )}
        </InlineForm>
      )}
      {!readOnly && current && !human.phone?.isVerified && <PhoneCode userId={userId} canCode={canCode} />}
    </Stack>
  );
}

/** `canCode`: may create a phone verification code for the user (user.authn.write, and not the user itself). */
export function ContactCard({ userId, human, readOnly, canCode }: { userId: string; human: HumanUser; readOnly: boolean; canCode: boolean }) {
  const { t } = useI18n();
  return (
    <TitledCard title={t("contact.title")}>
      <Stack gap="lg">
        <EmailSection userId={userId} human={human} readOnly={readOnly} />
        <PhoneSection userId={userId} human={human} readOnly={readOnly} canCode={canCode} />
        <Text size="sm" c="dimmed">
          {t("contact.phoneNote")}
        </Text>
      </Stack>
    </TitledCard>
  );
}
