#!/usr/bin/env bash
# Installs and starts a real WordPress for contentpipe's wordpress tests, on
# loopback only: Debian's wordpress package served by PHP's built-in server
# (php -S 127.0.0.1:PORT) on MariaDB, an Editor "contentpipe" and an Author
# "cp-author", each with an application password. Idempotent and fast on a
# second run: packages, database, site, users and passwords that are there
# are kept, and a server that answers is left running. Needs root (apt-get,
# /etc/wordpress, MariaDB's socket).
#
# Prints nothing secret. Writes STATE/env (mode 0600) with the variables the
# tests read, e.g.
#   CONTENTPIPE_TEST_WORDPRESS=http://contentpipe:<application password>@127.0.0.1:8089
# Use it with:  scripts/wordpress.sh && set -a && . /var/lib/contentpipe-wordpress/env && set +a
#
# Environment: CONTENTPIPE_WP_PORT (8089), CONTENTPIPE_WP_STATE
# (/var/lib/contentpipe-wordpress).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
port=${CONTENTPIPE_WP_PORT:-8089}
state=${CONTENTPIPE_WP_STATE:-/var/lib/contentpipe-wordpress}
site="http://127.0.0.1:$port"
start=$(date +%s)

say() { echo "wordpress: $*"; }

# 1. Debian's packages: WordPress, the PHP CLI with MySQL support, MariaDB,
# and the default theme (so that a post is a page a person can look at).
# Services are not started by the package scripts; this script starts what
# it needs.
need=()
for pkg in wordpress wordpress-theme-twentytwentythree php-cli php-mysql mariadb-server mariadb-client curl; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  # Debian's wordpress depends on a web server (apache2): its package
  # scripts must not start it (it would listen on every address). A
  # policy-rc.d that denies starts is put in place for the install when
  # the machine has none.
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d && policy=1
  fi
  apt-get update -qq
  rc=0
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 || rc=$?
  if [ -n "$policy" ]; then rm -f /usr/sbin/policy-rc.d; fi
  [ "$rc" -eq 0 ] || { say "apt-get install ${need[*]} failed ($rc)"; exit 1; }
fi

# 2. MariaDB (bound to 127.0.0.1 by Debian's my.cnf), started when down.
if ! mysqladmin ping >/dev/null 2>&1; then
  say "starting MariaDB"
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  for _ in $(seq 1 60); do mysqladmin ping >/dev/null 2>&1 && break; sleep 0.5; done
  mysqladmin ping >/dev/null 2>&1 || { say "MariaDB did not start (see /var/log/mysql/error.log)"; exit 1; }
fi

# 3. The database and its user; the password is made once and kept in STATE.
install -d -m 0700 "$state"
if [ ! -s "$state/db-password" ]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$state/db-password")
fi
dbpw=$(cat "$state/db-password")
mysql -uroot <<SQL
CREATE DATABASE IF NOT EXISTS contentpipe_wp CHARACTER SET utf8mb4;
CREATE USER IF NOT EXISTS 'contentpipe_wp'@'localhost' IDENTIFIED BY '$dbpw';
ALTER USER 'contentpipe_wp'@'localhost' IDENTIFIED BY '$dbpw';
GRANT ALL PRIVILEGES ON contentpipe_wp.* TO 'contentpipe_wp'@'localhost';
SQL

# 4. Debian's wp-config.php reads /etc/wordpress/config-<name>.php; the
# router (and setup.php) name it "contentpipe".
if [ ! -s "$state/salts" ]; then
  (umask 077; for k in AUTH_KEY SECURE_AUTH_KEY LOGGED_IN_KEY NONCE_KEY AUTH_SALT SECURE_AUTH_SALT LOGGED_IN_SALT NONCE_SALT; do
    echo "define('$k', '$(head -c 33 /dev/urandom | base64 | tr -d '/+=')');"; done > "$state/salts")
fi
conf=/etc/wordpress/config-contentpipe.php
new=$(mktemp)
cat > "$new" <<PHP
<?php
// Written by contentpipe's scripts/wordpress.sh: the test site on $site.
define('DB_NAME', 'contentpipe_wp');
define('DB_USER', 'contentpipe_wp');
define('DB_PASSWORD', '$dbpw');
define('DB_HOST', 'localhost');
define('WP_HOME', '$site');
define('WP_SITEURL', '$site');
// Application passwords over plain HTTP are allowed on a "local" site only.
define('WP_ENVIRONMENT_TYPE', 'local');
// Never reach outside the machine (updates, oEmbed, cron over HTTP).
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
$(cat "$state/salts")
PHP
if ! cmp -s "$new" "$conf"; then install -m 0640 -o root -g www-data "$new" "$conf"; fi
rm -f "$new"

# 5. The site, its users and their application passwords (setup.php keeps
# what is there and valid), and the variables the tests read.
install -m 0644 "$here/wordpress/router.php" "$state/router.php.new"
if ! cmp -s "$state/router.php.new" "$state/router.php"; then mv "$state/router.php.new" "$state/router.php"; restart=1; else rm "$state/router.php.new"; fi
php "$here/wordpress/setup.php" "$state" "$site"

# 6. The server: PHP's built-in one on loopback, one worker (requests are
# served in order), left running in the background.
answering() { curl -fsS -o /dev/null --max-time 5 "$site/wp-json/" 2>/dev/null; }
if [ -n "${restart:-}" ] || ! answering; then
  if [ -s "$state/server.pid" ] && kill -0 "$(cat "$state/server.pid")" 2>/dev/null; then
    kill "$(cat "$state/server.pid")" || true
    sleep 0.5
  fi
  say "starting php -S 127.0.0.1:$port"
  (cd /usr/share/wordpress && setsid nohup php -S "127.0.0.1:$port" -t /usr/share/wordpress "$state/router.php" \
     >"$state/server.log" 2>&1 < /dev/null & echo $! > "$state/server.pid")
  for _ in $(seq 1 60); do answering && break; sleep 0.25; done
  answering || { say "the server does not answer on $site/wp-json/ (see $state/server.log)"; exit 1; }
fi
say "ready on $site in $(( $(date +%s) - start ))s; variables in $state/env"
