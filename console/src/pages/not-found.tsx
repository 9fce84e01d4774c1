import { Button } from "@mantine/core";
import { useI18n } from "../i18n";
import { useLink } from "../router";
import { EmptyState } from "../ui";

export default function NotFound(_props: { params: string[] }) {
  const { t } = useI18n();
  const home = useLink("/");
  return (
    <EmptyState
      title={t("notFound.title")}
      hint={t("notFound.hint")}
      action={
        <Button component="a" {...home}>
          {t("nav.home")}
        </Button>
      }
    />
  );
}
