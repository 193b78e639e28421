#!/bin/sh
# compose.yaml's check-env service (sagas-check-env in the image): refuses
# at every `up` the passwords of .env.example left as they are, before
# PostgreSQL or any daemon starts (postgres depends on this service having
# exited 0). Each NAME given must be set, non-empty and not .env.example's
# placeholder (change-me-...). Exit 0, or 1 naming every bad variable.
#   sagas-check-env NAME...
bad=0
for v in "$@"; do
  val=$(printenv "$v" || true)
  case $val in
  "")
    echo "check-env: $v is not set: set it in .env (see .env.example)" >&2
    bad=1
    ;;
  change-me*)
    echo "check-env: $v is still .env.example's placeholder ($val): set a password of your own in .env" >&2
    bad=1
    ;;
  esac
done
[ "$bad" = 0 ] || exit 1
echo "check-env: $* set, none of them .env.example's"
