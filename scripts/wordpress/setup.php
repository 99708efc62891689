<?php
// php setup.php STATE_DIR SITE_URL — called by scripts/wordpress.sh.
// Installs the test site once, sets pretty permalinks (so /wp-json/ is the
// REST API), and keeps an Editor "contentpipe" and an Author "cp-author",
// each with one application password stored in STATE_DIR/<login>.app-password
// (0600). A stored password that still matches is kept; otherwise a new one
// is made. Writes STATE_DIR/env for the tests. Prints nothing secret.
[$self, $state, $site] = $argv + [null, null, null];
if (!$state || !$site) {
    fwrite(STDERR, "usage: php setup.php STATE_DIR SITE_URL\n");
    exit(2);
}
$u = parse_url($site);
$_SERVER['WORDPRESS_CONFIG'] = 'contentpipe';
$_SERVER['HTTP_HOST'] = $u['host'] . (isset($u['port']) ? ':' . $u['port'] : '');
$_SERVER['REQUEST_URI'] = '/';
$_SERVER['SERVER_PROTOCOL'] = 'HTTP/1.1';
$_SERVER['REQUEST_METHOD'] = 'GET';
define('WP_INSTALLING', true);
require '/usr/share/wordpress/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';

if (!is_blog_installed()) {
    // No mail goes out from the installer (there is no mail server).
    add_filter('pre_wp_mail', '__return_false');
    $r = wp_install('contentpipe test site', 'admin', 'admin@example.invalid', false, '', wp_generate_password(32, false));
    if (is_wp_error($r)) {
        fwrite(STDERR, 'wp_install: ' . $r->get_error_message() . "\n");
        exit(1);
    }
    echo "wordpress: installed the site\n";
}
global $wp_rewrite;
if (get_option('permalink_structure') !== '/%year%/%monthnum%/%day%/%postname%/') {
    $wp_rewrite->set_permalink_structure('/%year%/%monthnum%/%day%/%postname%/');
}
$wp_rewrite->flush_rules(false);

$env = '';
foreach ([['contentpipe', 'editor', 'CONTENTPIPE_TEST_WORDPRESS'], ['cp-author', 'author', 'CONTENTPIPE_TEST_WORDPRESS_AUTHOR']] as [$login, $role, $var]) {
    $user = get_user_by('login', $login);
    if (!$user) {
        $id = wp_insert_user(['user_login' => $login, 'user_pass' => wp_generate_password(32, false),
            'user_email' => $login . '@example.invalid', 'role' => $role, 'display_name' => $login]);
        if (is_wp_error($id)) {
            fwrite(STDERR, "create user $login: " . $id->get_error_message() . "\n");
            exit(1);
        }
        $user = get_user_by('id', $id);
        echo "wordpress: created the $role $login\n";
    }
    $file = "$state/$login.app-password";
    $pw = is_file($file) ? trim(file_get_contents($file)) : '';
    $valid = false;
    foreach (WP_Application_Passwords::get_user_application_passwords($user->ID) as $item) {
        if ($pw !== '' && wp_check_password($pw, $item['password'], $user->ID)) {
            $valid = true;
        }
    }
    if (!$valid) {
        $made = WP_Application_Passwords::create_new_application_password($user->ID, ['name' => 'contentpipe tests']);
        if (is_wp_error($made)) {
            fwrite(STDERR, "application password for $login: " . $made->get_error_message() . "\n");
            exit(1);
        }
        $pw = $made[0];
        $old = umask(077);
        file_put_contents($file, $pw . "\n");
        umask($old);
        echo "wordpress: made an application password for $login\n";
    }
    $env .= $var . '=' . $u['scheme'] . '://' . rawurlencode($login) . ':' . rawurlencode($pw) . '@' . $_SERVER['HTTP_HOST'] . "\n";
}
$old = umask(077);
file_put_contents("$state/env", $env);
umask($old);
