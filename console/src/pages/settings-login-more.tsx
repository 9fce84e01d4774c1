// The login settings beyond the switches: which second factors users may set up, and how long each check lasts (in
// hours; the API keeps whole seconds).
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Checkbox, NumberInput, SimpleGrid } from "@mantine/core";
import { type LoginSettings, SecondFactorType } from "../../../gen/svc/settings/v2/settings_pb";
import { useI18n } from "../i18n";

type Lifetime = "passwordCheckLifetime" | "externalLoginCheckLifetime" | "mfaInitSkipLifetime" | "secondFactorCheckLifetime" | "multiFactorCheckLifetime";

const LIFETIMES: [
  Lifetime,
  "settings.passwordCheck" | "settings.externalCheck" | "settings.mfaSkip" | "settings.secondFactorCheck" | "settings.multiFactorCheck",
][] = [
  ["passwordCheckLifetime", "settings.passwordCheck"],
  ["externalLoginCheckLifetime", "settings.externalCheck"],
  ["mfaInitSkipLifetime", "settings.mfaSkip"],
  ["secondFactorCheckLifetime", "settings.secondFactorCheck"],
  ["multiFactorCheckLifetime", "settings.multiFactorCheck"],
];

const hours = (d: { seconds: bigint } | undefined) => (d ? Math.round((Number(d.seconds) / 3600) * 100) / 100 : 0);

export function LoginMore({ s, setS, readOnly }: { s: LoginSettings; setS(s: LoginSettings): void; readOnly: boolean }) {
  const { t } = useI18n();
  return (
    <>
      <Checkbox.Group
        label={t("settings.secondFactors")}
        description={t("settings.secondFactorsHint")}
        value={s.secondFactors.map(String)}
        onChange={(v) => setS({ ...s, secondFactors: v.map((x) => Number(x) as SecondFactorType) })}
      >
        <SimpleGrid cols={{ base: 1, sm: 3 }} mt="xs">
          <Checkbox value={String(SecondFactorType.OTP)} label={t("settings.factorOtp")} disabled={readOnly} />
          <Checkbox value={String(SecondFactorType.U2F)} label={t("settings.factorU2f")} disabled={readOnly} />
          <Checkbox value={String(SecondFactorType.OTP_EMAIL)} label={t("settings.factorEmail")} disabled={readOnly} />
        </SimpleGrid>
      </Checkbox.Group>
      <SimpleGrid cols={{ base: 1, sm: 2 }}>
        {LIFETIMES.map(([k, label]) => (
          <NumberInput
            key={k}
            label={t(label)}
            min={0}
            max={87600}
            decimalScale={2}
            value={hours(s[k])}
            disabled={readOnly}
            onChange={(v) => setS({ ...s, [k]: durationFromMs(Math.round((Number(v) || 0) * 3600) * 1000) })}
          />
        ))}
      </SimpleGrid>
    </>
  );
}
