# nginx_conf.sh: the nginx configuration that the tests and the services
# benchmark run (test_real_services.sh, test_daemons.sh,
# bench/services/); sourced, never run.

# nginx_conf DIR PORT CONNECTIONS [TOP-LEVEL LINE]: DIR/nginx.conf for a
# master and two workers answering "hello" on 127.0.0.1:PORT (reuseport,
# so the kernel spreads connections over both workers), in the foreground
# unless NGINX_DAEMON=on.
nginx_conf() {
    cat >"$1/nginx.conf" <<NGX
daemon ${NGINX_DAEMON:-off};
master_process on;
worker_processes 2;
${4:-}
pid $1/nginx.pid;
error_log $1/logs/error.log;
events { worker_connections $3; }
http {
    access_log off;
    server {
        listen 127.0.0.1:$2 reuseport;
        location / { return 200 "hello\\n"; }
    }
}
NGX
}
