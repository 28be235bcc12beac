// kvfit-serve: `kvfit serve` in its own executable, so that the HTTP stack (libmicrohttpd, and the TLS and
// compression libraries Debian's build links) is mapped only by the server and never by a plan: `kvfit serve ...`
// executes this program (app/main.cpp), with argv[0] "serve" as app/cli_serve.h expects.
#include "cli_serve.h"

int main(int argc, char ** argv) { return kvfit::app::run_serve(argc, argv); }
