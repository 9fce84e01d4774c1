// A human user with a password (or a machine user), in an organization the caller manages users of.
import { useMutation } from "@connectrpc/connect-query";
import { Checkbox, PasswordInput, SegmentedControl, Stack, TextInput } from "@mantine/core";
import { useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { UserService } from "../../../gen/svc/user/v2/user_service_pb";
import { SaveRow } from "../fields";
import { useI18n } from "../i18n";
import { useRouter } from "../router";
import { PageHeader } from "../ui";
import { OrgSelect } from "./org-select";

export default function UserNew() {
  const { t } = useI18n();
  const { navigate } = useRouter();
  const client = useQueryClient();
  const create = useMutation(UserService.method.createUser);
  const [kind, setKind] = useState<"human" | "machine">("human");
  const [orgId, setOrgId] = useState<string | null>(null);
  const [f, setF] = useState({ username: "", givenName: "", familyName: "", email: "", password: "", changeRequired: true, name: "" });
  const set = (k: keyof typeof f) => (e: React.ChangeEvent<HTMLInputElement>) =>
    setF({ ...f, [k]: e.currentTarget.type === "checkbox" ? e.currentTarget.checked : e.currentTarget.value });
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const res = await create.mutateAsync({
      organizationId: orgId ?? "",
      ...(f.username ? { username: f.username } : {}),
      userType:
        kind === "human"
          ? {
              case: "human",
              value: {
                profile: { givenName: f.givenName, familyName: f.familyName },
                email: { email: f.email, isVerified: true },
                ...(f.password ? { passwordType: { case: "password", value: { password: f.password, changeRequired: f.changeRequired } } } : {}),
              },
            }
          : { case: "machine", value: { name: f.name } },
    });
    await client.invalidateQueries();
    navigate(`/users/${encodeURIComponent(res.id)}`);
  };
  return (
    <>
      <PageHeader title={t("users.new")} back={{ to: "/users", label: t("nav.users") }} />
      <form onSubmit={(e) => void submit(e).catch(() => undefined)}>
        <Stack maw={520}>
          <SegmentedControl
            value={kind}
            onChange={(v) => setKind(v as "human" | "machine")}
            aria-label={t("users.kind")}
            data={[
              { value: "human", label: t("users.human") },
              { value: "machine", label: t("users.machine") },
            ]}
          />
          <OrgSelect label={t("users.org")} value={orgId} onChange={setOrgId} permission="user.write" />
          {kind === "human" ? (
            <>
              <TextInput label={t("users.givenName")} value={f.givenName} onChange={set("givenName")} required />
              <TextInput label={t("users.familyName")} value={f.familyName} onChange={set("familyName")} required />
              <TextInput label={t("users.email")} type="email" value={f.email} onChange={set("email")} required />
              <TextInput label={t("users.username")} description={t("users.usernameHint")} value={f.username} onChange={set("username")} />
              <PasswordInput label={t("users.password")} description={t("users.passwordHint")} value={f.password} onChange={set("password")} />
              <Checkbox label={t("users.changeRequired")} checked={f.changeRequired} onChange={set("changeRequired")} />
            </>
          ) : (
            <>
              <TextInput label={t("users.username")} value={f.username} onChange={set("username")} required />
              <TextInput label={t("users.machineName")} value={f.name} onChange={set("name")} required />
            </>
          )}
          <SaveRow error={create.error} saving={create.isPending} label={t("action.create")} />
        </Stack>
      </form>
    </>
  );
}
