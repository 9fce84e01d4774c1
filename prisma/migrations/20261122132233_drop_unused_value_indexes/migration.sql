-- Email and phone rows are looked up by lower(value) (UserEmail_lower_value_idx) or per user, never by the raw value.
-- DropIndex
DROP INDEX "UserEmail_value_idx";

-- DropIndex
DROP INDEX "UserPhone_value_idx";
