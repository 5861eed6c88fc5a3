#!/usr/bin/env bash
# The Debian/Ubuntu packages filegate's tests use, installed when missing: `npm test`
# runs this first (its `pretest` step), so the README's test command works on a fresh
# machine. Each package is checked by a file it provides; the missing ones are
# installed in one apt-get call, saying which. When that cannot be done, it stops at
# once with the one command to run. Nothing is ever skipped silently.
#
#   scripts/test-deps.sh [--dry-run] [test|build]
#     test   (default) what the tests run: real sshd, vsftpd and smbd to test the
#            sftp/ftp/smb drivers against (openssl: the FTPS certificate; smbclient,
#            python3-paramiko, rclone, sshfs, awscli, python3-boto3, s3cmd: independent clients), unzip (an independent zip
#            reader), chromium and a font (the admin console's browser test), PostgreSQL (the
#            shared state store), nginx with its stream module and HAProxy (the cluster test's
#            load balancers). The tests
#            add throwaway system users and start those servers, so they need root.
#     build  what `npm install`/`npm ci` needs to compile better-sqlite3 when no
#            prebuilt binary can be downloaded: make, g++, python3.
#     --dry-run  say what would be installed, install nothing.
# TEST_DEPS_PREFIX (for this script's own test) is put before every checked path, so
# that packages can be made to look missing without removing them.
set -uo pipefail

group=test
dry=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry=1 ;;
    test | build) group=$arg ;;
    *) echo "usage: $0 [--dry-run] [test|build]" >&2; exit 2 ;;
  esac
done

case "$group" in
  test)
    pairs=(
      /usr/bin/unzip:unzip
      /usr/sbin/sshd:openssh-server /usr/bin/ssh-keygen:openssh-client
      /usr/sbin/vsftpd:vsftpd /usr/bin/openssl:openssl
      /usr/sbin/smbd:samba /usr/bin/smbclient:smbclient
      /usr/lib/python3/dist-packages/paramiko:python3-paramiko /usr/bin/rclone:rclone /usr/bin/sshfs:sshfs
      /usr/bin/aws:awscli /usr/lib/python3/dist-packages/boto3:python3-boto3 /usr/bin/s3cmd:s3cmd
      /usr/bin/chromium:chromium /usr/share/fonts/truetype/dejavu:fonts-dejavu-core
      /usr/lib/postgresql/15/bin/postgres:postgresql /usr/sbin/nginx:nginx-light
      /usr/lib/nginx/modules/ngx_stream_module.so:libnginx-mod-stream /usr/sbin/haproxy:haproxy
    )
    ;;
  build) pairs=(/usr/bin/make:make /usr/bin/g++:g++ /usr/bin/python3:python3) ;;
esac

uid=$(id -u)
if [ "$group" = test ] && [ "$uid" -ne 0 ]; then
  echo "npm test must run as root (e.g. sudo npm test): the tests add throwaway system users (useradd) and start sshd, vsftpd and smbd as root." >&2
  exit 1
fi

need=()
for pair in "${pairs[@]}"; do
  [ -e "${TEST_DEPS_PREFIX:-}${pair%%:*}" ] || need+=("${pair#*:}")
done
[ ${#need[@]} -eq 0 ] && exit 0

install="apt-get install -y --no-install-recommends ${need[*]}"
sudo=""
if [ "$uid" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
  else
    echo "missing Debian packages: ${need[*]} (not root, and no passwordless sudo to install them): run  sudo $install" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null; then
  echo "missing packages: ${need[*]}, and apt-get is not available: install them with this system's package manager" >&2
  exit 1
fi

echo "installing the Debian packages the ${group} step needs: ${need[*]}"
if [ "$dry" -eq 1 ]; then
  echo "dry run: would run: ${sudo:+$sudo }apt-get update -qq && ${sudo:+$sudo }$install"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; }; then
  echo "apt-get could not install ${need[*]}: run  ${sudo:+sudo }$install" >&2
  exit 1
fi
for pair in "${pairs[@]}"; do
  if [ ! -e "${TEST_DEPS_PREFIX:-}${pair%%:*}" ]; then
    echo "${pair%%:*} is still missing after installing ${pair#*:}: run  ${sudo:+sudo }apt-get install -y ${pair#*:}" >&2
    exit 1
  fi
done
