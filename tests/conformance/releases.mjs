// The llama.cpp releases the conformance suite runs against, and how each one's runtime is found.
//
// Each release has its own directory releases/<id>/ with a committed package.json + package-lock.json that pin
// node-llama-cpp and its CPU binary @node-llama-cpp/linux-x64; run.sh installs it there with
// `npm ci --omit=optional --ignore-scripts` (releases/<id>/node_modules, ignored by git; it may also be a symlink
// to an existing install of the same version). measure.mjs imports node-llama-cpp from that directory only, and
// refuses a runtime whose version is not the pinned one, so a report always measures the release it names.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/// id -> what it pins. id is what kvfit's --llamacpp-version takes; build_commit and ggml are the build-info
/// strings inside libggml-base.so, release the llama.cpp tag in node-llama-cpp's llama/binariesGithubRelease.json.
export const RELEASES = {
    "5b4ebc5": { node_llama_cpp: "3.21.1", release: "v0.4.0", build_commit: "5b4ebc5", ggml: "0.23.0" },
    "v0.5.0":  { node_llama_cpp: "3.22.1", release: "v0.5.0", build_commit: "0ad4a86", ggml: "0.25.1" },
};
export const RELEASE_IDS = Object.keys(RELEASES);

/// The release used when none is named: $CONFORMANCE_RELEASE, else the newest.
export function defaultRelease() {
    return process.env.CONFORMANCE_RELEASE || RELEASE_IDS[RELEASE_IDS.length - 1];
}

export function checkRelease(id) {
    if (!RELEASES[id]) throw new Error(`unknown llama.cpp release '${id}' (known: ${RELEASE_IDS.join(", ")})`);
    return id;
}

/// releases/<id>/node_modules, or $CONFORMANCE_NODE_MODULES when set: another install of the same pinned version
/// (cpu_variant.mjs makes one whose bins hold a single libggml-cpu variant, to measure another host's CPU backend).
export function runtimeModules(id) {
    checkRelease(id);
    return process.env.CONFORMANCE_NODE_MODULES || path.join(here, "releases", id, "node_modules");
}

/// The installed node-llama-cpp package directory of release id (throws when missing or not the pinned version).
export function runtimePackageDir(id) {
    const dir = path.join(runtimeModules(id), "node-llama-cpp");
    let pkg;
    try { pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")); } catch {
        throw new Error(`node-llama-cpp for release ${id} is not installed in ${path.relative(process.cwd(), runtimeModules(id)) || "."}: ` +
            `run tests/conformance/run.sh, or (cd tests/conformance/releases/${id} && npm ci --omit=optional --ignore-scripts)`);
    }
    if (pkg.version !== RELEASES[id].node_llama_cpp)
        throw new Error(`releases/${id}/node_modules holds node-llama-cpp ${pkg.version}, release ${id} pins ${RELEASES[id].node_llama_cpp}`);
    return dir;
}

/// Imports node-llama-cpp of release id (ESM entry point from its package.json "exports").
export async function importRuntime(id) {
    const dir = runtimePackageDir(id);
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
    const exp = pkg.exports?.["."];
    const entry = (typeof exp === "string" ? exp : exp?.import ?? exp?.node ?? exp?.default) ?? pkg.main ?? "index.js";
    return import(pathToFileURL(path.join(dir, entry)).href);
}
