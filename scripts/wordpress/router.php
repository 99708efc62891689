<?php
// Router for PHP's built-in server (php -S 127.0.0.1:PORT -t /usr/share/wordpress router.php),
// installed by scripts/wordpress.sh: serves Debian's WordPress with its
// config /etc/wordpress/config-contentpipe.php, wp-content from
// /var/lib/wordpress (Debian's WP_CONTENT_DIR), and every other path that is
// not a file (pretty permalinks, /wp-json/) through index.php, as Apache's
// rewrite rules would.
$_SERVER['WORDPRESS_CONFIG'] = 'contentpipe';
$root = '/usr/share/wordpress';
$path = rawurldecode(parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH) ?? '/');
if (strpos($path, '..') !== false) {
    http_response_code(400);
    return true;
}

$types = ['css' => 'text/css', 'js' => 'application/javascript', 'png' => 'image/png', 'jpg' => 'image/jpeg',
    'gif' => 'image/gif', 'svg' => 'image/svg+xml', 'woff2' => 'font/woff2', 'woff' => 'font/woff',
    'ttf' => 'font/ttf', 'json' => 'application/json', 'ico' => 'image/x-icon', 'webp' => 'image/webp'];
$static = function (string $file) use ($types) {
    $ext = strtolower(pathinfo($file, PATHINFO_EXTENSION));
    header('Content-Type: ' . ($types[$ext] ?? 'application/octet-stream'));
    header('Content-Length: ' . filesize($file));
    readfile($file);
    return true;
};

if (strpos($path, '/wp-content/') === 0) {
    $file = '/var/lib/wordpress' . $path;
    if (is_file($file) && substr($file, -4) !== '.php') {
        return $static($file);
    }
}
$file = $root . $path;
if (is_dir($file) && is_file(rtrim($file, '/') . '/index.php')) {
    $file = rtrim($file, '/') . '/index.php';
}
if ($path !== '/' && is_file($file)) {
    if (substr($file, -4) === '.php') {
        $_SERVER['SCRIPT_NAME'] = substr($file, strlen($root));
        $_SERVER['SCRIPT_FILENAME'] = $file;
        $_SERVER['PHP_SELF'] = $_SERVER['SCRIPT_NAME'];
        chdir(dirname($file));
        require $file;
        return true;
    }
    return $static($file);
}
$_SERVER['SCRIPT_NAME'] = '/index.php';
$_SERVER['SCRIPT_FILENAME'] = $root . '/index.php';
$_SERVER['PHP_SELF'] = '/index.php';
chdir($root);
require $root . '/index.php';
return true;
