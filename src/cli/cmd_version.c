/*
 * cmd_version.c - `cdcflow version`: our version and the linked libraries'.
 */
#include <avro.h>
#include <curl/curl.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <libpq-fe.h>
#include <lz4.h>
#include <microhttpd.h>
#include <openssl/crypto.h>
#include <sqlite3.h>
#include <stdio.h>
#include <zlib.h>
#include <zstd.h>

#include "cdcflow/version.h"
#include "cli.h"

static int run(int argc, char **argv) {
    (void)argc, (void)argv;
    int pq = PQlibVersion();
    printf("cdcflow %s\n", CF_VERSION_STRING);
    printf("  librdkafka    %s\n", rd_kafka_version_str());
    printf("  avro-c        %s (build time)\n", CF_AVRO_C_VERSION);
    printf("  jansson       %s\n", jansson_version_str());
    printf("  libcurl       %s\n", curl_version_info(CURLVERSION_NOW)->version);
    printf("  libmicrohttpd %s\n", MHD_get_version());
    printf("  sqlite3       %s\n", sqlite3_libversion());
    printf("  libpq         %d.%d\n", pq / 10000, pq % 10000);
    printf("  lz4           %s\n", LZ4_versionString());
    printf("  zstd          %s\n", ZSTD_versionString());
    printf("  zlib          %s\n", zlibVersion());
    printf("  OpenSSL       %s\n", OpenSSL_version(OPENSSL_VERSION));
    return CF_EXIT_OK;
}

const cf_command cf_cmd_version = {
    "version",
    "print the cdcflow version and the versions of the linked libraries",
    "Usage: cdcflow version\n"
    "\n"
    "Prints the cdcflow version, then one line per linked library (librdkafka,\n"
    "avro-c, jansson, libcurl, libmicrohttpd, sqlite3, libpq, lz4, zstd, zlib,\n"
    "OpenSSL) with the version found at run time. Include this output in bug reports.",
    run,
};
