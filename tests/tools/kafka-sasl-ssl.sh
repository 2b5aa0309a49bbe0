# shellcheck shell=bash
# A SASL_SSL listener for kafka-broker.sh (`start --sasl-ssl`); sourced, not executed.
#
# Everything is throwaway and made fresh per cluster dir, in DIR/sasl-ssl/:
#   ca.pem                 the CA clients trust (librdkafka: ssl.ca.location)
#   ca.key, broker.*       the CA's key; the brokers' key and certificate (SAN IP:127.0.0.1)
#   broker.p12             the brokers' keystore (openssl pkcs12), truststore.p12 (keytool)
#   secrets.env            passwords (0600): the client user's, the inter-broker user's
#   client.properties      Java client settings for the `exactly` user (kafka-tool.sh
#                          --command-config), SCRAM-SHA-512
#
# Users: `exactly` (the clients; password $EXACTLY_KAFKA_SASL_PASSWORD, else random) and
# `admin` (inter-broker, random). Both can log in with PLAIN and with SCRAM-SHA-512.
# Passwords are limited to [A-Za-z0-9._-]: they are spliced into JAAS strings and into
# StorageTool's --add-scram syntax, which have no escaping that works for both.

KS_USER=exactly

ks_dir() { echo "$DIR/sasl-ssl"; }

# Makes the CA, the broker certificate and stores, and the passwords, once per DIR.
ks_prepare() {
    local d; d="$(ks_dir)"
    [[ -f "$d/.complete" ]] && return 0
    kt_need openssl "apt-get install openssl"
    kt_need keytool "comes with the JDK: apt-get install default-jdk-headless"
    local pw="${EXACTLY_KAFKA_SASL_PASSWORD:-$(openssl rand -hex 16)}"
    [[ "$pw" =~ ^[A-Za-z0-9._-]{4,}$ ]] \
        || die "EXACTLY_KAFKA_SASL_PASSWORD must be 4+ characters of [A-Za-z0-9._-]"
    rm -rf "$d"; mkdir -p "$d"; chmod 700 "$d"
    local store_pw admin_pw
    store_pw="$(openssl rand -hex 16)"; admin_pw="$(openssl rand -hex 16)"
    (
        cd "$d"
        set -e
        openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 7 -keyout ca.key -out ca.pem \
            -subj "/CN=exactly test CA" -addext "basicConstraints=critical,CA:TRUE" \
            -addext "keyUsage=critical,keyCertSign,cRLSign"
        openssl req -newkey rsa:2048 -nodes -sha256 -keyout broker.key -out broker.csr -subj "/CN=127.0.0.1"
        # librdkafka and the Java clients both check the host name: 127.0.0.1 must be an IP SAN.
        printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "extendedKeyUsage=serverAuth,clientAuth" >broker.ext
        openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days 7 \
            -extfile broker.ext -out broker.pem
        openssl pkcs12 -export -name broker -in broker.pem -inkey broker.key -certfile ca.pem \
            -passout "pass:$store_pw" -out broker.p12
        keytool -importcert -noprompt -alias ca -file ca.pem -storetype PKCS12 \
            -keystore truststore.p12 -storepass "$store_pw"
    ) >"$d/make.log" 2>&1 || { cat "$d/make.log" >&2; die "making the TLS material failed (see $d/make.log)"; }
    (
        umask 077
        printf 'KS_PASSWORD=%s\nKS_ADMIN_PASSWORD=%s\nKS_STORE_PASSWORD=%s\n' "$pw" "$admin_pw" "$store_pw" >"$d/secrets.env"
        cat >"$d/client.properties" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$KS_USER" password="$pw";
ssl.truststore.location=$d/truststore.p12
ssl.truststore.type=PKCS12
ssl.truststore.password=$store_pw
EOF
    )
    touch "$d/.complete"
}

ks_load() {
    # shellcheck disable=SC1091
    source "$(ks_dir)/secrets.env"
}

# Listener settings for node n (appended to its server.properties). The controller
# listener stays PLAINTEXT on 127.0.0.1: only the brokers themselves speak on it.
ks_node_props() {
    local n="$1" d; d="$(ks_dir)"
    ks_load
    local bp=$(( BROKER_BASE + n - 1 )) cp=$(( CTRL_BASE + n - 1 ))
    cat <<EOF
listeners=SASL_SSL://127.0.0.1:$bp,CONTROLLER://127.0.0.1:$cp
advertised.listeners=SASL_SSL://127.0.0.1:$bp
inter.broker.listener.name=SASL_SSL
listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=PLAIN
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="$KS_ADMIN_PASSWORD" user_admin="$KS_ADMIN_PASSWORD" user_$KS_USER="$KS_PASSWORD";
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$KS_ADMIN_PASSWORD";
ssl.keystore.type=PKCS12
ssl.keystore.location=$d/broker.p12
ssl.keystore.password=$KS_STORE_PASSWORD
ssl.key.password=$KS_STORE_PASSWORD
ssl.truststore.type=PKCS12
ssl.truststore.location=$d/truststore.p12
ssl.truststore.password=$KS_STORE_PASSWORD
ssl.client.auth=none
EOF
}

# StorageTool format arguments: the SCRAM credentials live in the KRaft metadata log.
ks_format_args() {
    ks_load
    printf '%s\n' --add-scram "SCRAM-SHA-512=[name=$KS_USER,password=$KS_PASSWORD]" \
        --add-scram "SCRAM-SHA-512=[name=admin,password=$KS_ADMIN_PASSWORD]"
}
