# postfix_conf.sh: the private postfix instance that test_postfix.sh and
# bench/services/postfix_rounds.sh run (sourced by both): smtpd on a
# loopback port, delivery by virtual (as root, taking nobody's effective
# ids around each delivery) into DIR/mail/box, no chroot, the log in
# DIR/maillog; the services get LD_PRELOAD and the LIBPPROF_ variables
# they need (import_environment).
# pf_conf DIR SMTP_PORT [MAIN_CF_LINE...]: makes DIR's directories and
# writes DIR/conf, main.cf with the extra lines at its end; then
# `postfix -c DIR/conf start`.
pf_conf() {
    local d=$1 port=$2
    shift 2
    mkdir -p "$d/conf" "$d/queue" "$d/data" "$d/mail"
    chmod 755 "$d"
    chown postfix "$d/data"
    chown 65534:65534 "$d/mail"
    awk -v p="$port" '/^smtp +inet/ { print "127.0.0.1:" p " inet n - n - - smtpd"; next }
        /^[a-z]/ && $5 != "" { $5 = "n" } { print }' /usr/share/postfix/master.cf.dist |
        grep -v '^ *-o\|^#' >"$d/conf/master.cf"
    cp /usr/share/postfix/dynamicmaps.cf "$d/conf/" 2>/dev/null || true
    cat >"$d/conf/main.cf" <<EOF
compatibility_level = 3.6
queue_directory = $d/queue
data_directory = $d/data
mail_owner = postfix
setgid_group = postdrop
inet_interfaces = loopback-only
inet_protocols = ipv4
myhostname = pp.test
mydestination =
alias_maps =
alias_database =
mynetworks = 127.0.0.0/8
smtpd_recipient_restrictions = permit_mynetworks, reject
virtual_mailbox_domains = pp.test
virtual_mailbox_base = $d/mail
virtual_mailbox_maps = static:box/
virtual_uid_maps = static:65534
virtual_gid_maps = static:65534
maillog_file = $d/maillog
maillog_file_prefixes = $d
import_environment = MAIL_CONFIG MAIL_DEBUG MAIL_LOGTAG TZ XAUTHORITY DISPLAY LANG=C
    POSTLOG_SERVICE POSTLOG_HOSTNAME LD_PRELOAD LIBPPROF_ADDR LIBPPROF_HUB LIBPPROF_CPU_HZ
EOF
    printf '%s\n' "$@" >>"$d/conf/main.cf"
}
