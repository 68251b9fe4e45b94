"""Structural checks of deploy/ and docs/operations.md against the Rust sources, for check.sh.

Each subcommand prints nothing and exits 0 when the check passes, or prints the problems and
exits 1. They read the sources, never a built binary:

  metrics FILE...   every metric name a Grafana dashboard (JSON) or Prometheus rule file (YAML)
                    queries is one the node or thresholdd registers, with a suffix its type has
  dashboard FILE    the dashboard's structure: unique panel ids, every query on the datasource
                    variable, a grid position for every panel
  commands FILE...  every `quasar-node` and `thresholdd` command line in the files names a
                    subcommand and flags their clap definitions have
  compose FILE      compose interpolation syntax, declared volumes and networks, depends_on
                    targets, static addresses inside the subnet, bind-mounted files present
  dockerfile FILE   multi-stage build of the two binaries, a slim non-root runtime stage that
                    copies exactly quasar-node and thresholdd, and the default ports exposed
  nodetoml FILE...  node.toml files and templates use only fields NodeConfig accepts
  k8s FILE...       rendered manifests: security contexts, resources, probes on real API routes
                    and declared ports, referenced ConfigMaps and Secrets present, a PDB of
                    maxUnavailable 1, a headless Service and one Service per ordinal
"""

import ipaddress
import json
import os
import re
import sys

import yaml

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def src(relative):
    """A source file, by its path from the repository root."""
    return read(os.path.join(REPO, relative))


# ---------------------------------------------------------------------------------------------
# Metric names the sources register.

# Sample names prometheus-client's text encoder writes for each metric type.
SUFFIXES = {"counter": ["_total"], "gauge": [""], "histogram": ["_bucket", "_sum", "_count"]}


def metric_type(text, value):
    """The type of the metric held in `value` (a struct field or a local), from its declaration
    in `text`: the last of Counter, Gauge, Histogram named there."""
    patterns = [
        rf"\b(?:pub\s+)?{value}\s*:\s*([^\n]+)",  # struct field
        rf"\blet\s+(?:mut\s+)?{value}\s*=\s*([^;\n]+)",  # local binding
    ]
    for pattern in patterns:
        for decl in re.findall(pattern, text):
            kinds = re.findall(r"\b(Counter|Gauge|Histogram)\b", decl)
            if kinds:
                return kinds[-1].lower()
    raise SystemExit(f"check.py: cannot tell the type of metric value `{value}`")


def registered(text):
    """(name, type) for every `register("name", "help", x.clone())` in `text`."""
    out = []
    for name, value in re.findall(
        r'\.register\(\s*"([a-z0-9_]+)",\s*"(?:[^"\\]|\\.)*",\s*(?:self\.|m\.)?([a-z_]+)\.clone\(\)',
        text,
    ):
        out.append((name, metric_type(text, value)))
    return out


def collected(text):
    """(name, type) for the names custom collectors encode: the entries of their
    (name, help, value) tables, encoded as counters, and `encode_descriptor("name", …)` calls,
    typed by the Const metric built just before."""
    out = []
    for block in re.findall(r"impl Collector for \w+ \{(.*?)\n\}", text, re.S):
        table = re.findall(r'\(\s*"([a-z0-9_]+)",\s*"', block)
        if table and not re.search(r"ConstCounter::new\(value|encode_per_queue\(", block):
            raise SystemExit("check.py: a collector table that is not encoded as counters")
        out += [(name, "counter") for name in table]
        for const, name in re.findall(
            r"Const(Counter|Gauge)::new[^;]*;\s*let \w+ = encoder\.encode_descriptor\(\s*\"([a-z0-9_]+)\"",
            block,
            re.S,
        ):
            out.append((name, const.lower()))
    # encode_per_queue writes the table entries as counters; make sure it still does.
    if "fn encode_per_queue" in text and "MetricType::Counter" not in text:
        raise SystemExit("check.py: encode_per_queue no longer encodes counters")
    return out


def prefixes(text):
    return set(re.findall(r'sub_registry_with_prefix\("([a-z0-9_]+)"\)', text))


def exported_metrics():
    """{sample name: family} for every sample the node and thresholdd can export."""
    families = {}
    # node/src/metrics.rs: everything under the `quasar` prefix.
    text = src("node/src/metrics.rs")
    (prefix,) = prefixes(text)
    for name, kind in registered(text) + collected(text):
        families[f"{prefix}_{name}"] = kind
    # p2p/src/metrics.rs registers under `p2p`, inside the registry runtime.rs gives it.
    p2p = src("p2p/src/metrics.rs")
    (inner,) = prefixes(p2p)
    outer = re.search(
        r'p2p_metrics\.register\(registry\.sub_registry_with_prefix\("([a-z0-9_]+)"\)\)',
        src("node/src/runtime.rs"),
    ).group(1)
    for name, kind in registered(p2p):
        families[f"{outer}_{inner}_{name}"] = kind
    # thresholdd/src/metrics.rs: its own registry, no prefix.
    daemon = src("thresholdd/src/metrics.rs")
    if prefixes(daemon):
        raise SystemExit("check.py: thresholdd metrics now have a prefix; teach check.py")
    for name, kind in registered(daemon):
        families[name] = kind
    samples = {}
    for family, kind in families.items():
        for suffix in SUFFIXES[kind]:
            samples[family + suffix] = family
    return samples


def queries(path):
    """Every PromQL expression in a dashboard (JSON) or rule file (YAML)."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("expr", "query", "definition") and isinstance(value, str):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    with open(path, encoding="utf-8") as f:
        walk(json.load(f) if path.endswith(".json") else yaml.safe_load(f))
    return found


def check_metrics(paths):
    samples = exported_metrics()
    problems = []
    for path in paths:
        exprs = queries(path)
        if not exprs:
            problems.append(f"{path}: no queries found")
        for expr in exprs:
            # Drop label matchers' values and strings, then take every metric-shaped word.
            bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
            for name in re.findall(r"\b((?:quasar|thresholdd)_[a-zA-Z0-9_]*)", bare):
                if name not in samples:
                    problems.append(f"{path}: unknown metric {name} in: {expr}")
    return problems


# ---------------------------------------------------------------------------------------------
# Grafana dashboard structure.


def check_dashboard(paths):
    problems = []
    for path in paths:
        board = json.loads(read(path))
        for key in ("title", "uid", "panels", "schemaVersion"):
            if key not in board:
                problems.append(f"{path}: no `{key}`")
        variables = {v.get("name") for v in board.get("templating", {}).get("list", [])}
        if "datasource" not in variables:
            problems.append(f"{path}: no `datasource` template variable")
        ids = set()
        for panel in board.get("panels", []):
            title = panel.get("title", "?")
            if panel.get("id") in ids:
                problems.append(f"{path}: duplicate panel id {panel.get('id')}")
            ids.add(panel.get("id"))
            if "gridPos" not in panel:
                problems.append(f"{path}: panel {title!r} has no gridPos")
            if panel.get("type") == "row":
                continue
            if panel.get("datasource", {}).get("uid") != "${datasource}":
                problems.append(f"{path}: panel {title!r} is not on the datasource variable")
            if not panel.get("targets"):
                problems.append(f"{path}: panel {title!r} has no queries")
            if not panel.get("description"):
                problems.append(f"{path}: panel {title!r} has no description")
    return problems


# ---------------------------------------------------------------------------------------------
# Command lines against the clap definitions.


def kebab(name):
    return name.replace("_", "-")


def clap_flags(body, text=""):
    """--flags of the fields in a clap struct or enum-variant body; a `#[command(flatten)]`
    field adds the flags of its struct, looked up in `text` (the source file)."""
    flags = set()
    for flattened in re.findall(r"#\[command\(flatten\)\]\s*(?:pub\s+)?\w+\s*:\s*(\w+)", body):
        found = re.search(rf"struct {flattened} \{{(.*?)\n\}}", text, re.S)
        if found:
            flags |= clap_flags(found.group(1), text)
    for attrs, field in re.findall(r"((?:\s*#\[[^\]]*\]\s*|\s*///[^\n]*\n)*)\s*(?:pub\s+)?(\w+)\s*:", body):
        arg = re.search(r"#\[arg\(([^\]]*)\)\]", attrs)
        if not arg or "long" not in arg.group(1):
            continue
        explicit = re.search(r'long\s*=\s*"([a-z0-9-]+)"', arg.group(1))
        flags.add("--" + (explicit.group(1) if explicit else kebab(field)))
    return flags


def enum_body(text, name):
    start = re.search(rf"enum {name} \{{", text).end()
    depth, i = 1, start
    while depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[start : i - 1]


def variants(body):
    """{kebab name: body} of an enum's variants (struct variants and unit/tuple ones)."""
    out = {}
    for match in re.finditer(r"^    (\w+)(\s*\{|\s*,|\s*\()", body, re.M):
        name = match.group(1)
        inner = ""
        if match.group(2).strip() == "{":
            start, depth, i = match.end(), 1, match.end()
            while depth:
                depth += {"{": 1, "}": -1}.get(body[i], 0)
                i += 1
            inner = body[start : i - 1]
        out[re.sub(r"(?<!^)([A-Z])", r"-\1", name).lower()] = inner
    return out


def command_specs():
    """{binary: (global flags, {subcommand path: flags})}."""
    main = src("node/src/main.rs")
    node = {}
    for path, body in variants(enum_body(main, "Command")).items():
        node[path] = clap_flags(body, main)
        # A nested subcommand enum (`#[command(subcommand)] action: GuardAction`).
        nested = re.search(r"#\[command\(subcommand\)\]\s*\w+\s*:\s*(\w+)", body)
        if nested:
            for sub, sub_body in variants(enum_body(main, nested.group(1))).items():
                node[f"{path} {sub}"] = clap_flags(sub_body, main)
    node_cli = re.search(r"struct Cli \{(.*?)\n\}", main, re.S).group(1)
    daemon_text = src("thresholdd/src/main.rs")
    cli = re.search(r"struct Cli \{(.*?)\n\}", daemon_text, re.S).group(1)
    daemon = {"": set()}
    for path, body in variants(enum_body(daemon_text, "Command")).items():
        daemon[path] = clap_flags(body)
    for path, body in variants(enum_body(daemon_text, "KeysAction")).items():
        daemon[f"keys {path}"] = clap_flags(body)
    for path, body in variants(enum_body(daemon_text, "GuardAction")).items():
        daemon[f"guard {path}"] = clap_flags(body)
    return {
        "quasar-node": (clap_flags(node_cli), node),
        "thresholdd": (clap_flags(cli), daemon),
    }


def command_lines(text):
    """Logical lines (backslash continuations joined) that run quasar-node or thresholdd."""
    joined = re.sub(r"\\\n\s*", " ", text)
    start = r"(?:^|(?<=[\s\"'`(=])|(?<=bin/)|(?<=release/)|(?<=debug/))"
    for line in joined.splitlines():
        for match in re.finditer(start + r"(quasar-node|thresholdd)\s+(-[\w-]|[a-z])", line):
            if re.search(r"(?:-p|--package)\s+$", line[: match.start(1)]):
                continue  # cargo's package name
            rest = line[match.start(1) :]
            segment = re.split(r"\s(?:\||;|&&|\|\||#|>|2>)\s|[`\)]", rest)[0]
            yield match.group(1), segment


def yaml_commands(path):
    """The command lines of a YAML file's `command`, `entrypoint` and `args` lists, one a line."""
    lines = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("command", "entrypoint", "args") and isinstance(value, list):
                    lines.append(" ".join(str(v) for v in value))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for doc in yaml.safe_load_all(read(path)):
        walk(doc)
    return "\n".join(lines)


def check_commands(paths):
    specs = command_specs()
    problems = []
    for path in paths:
        text = read(path)
        if path.endswith((".yaml", ".yml")):
            text += "\n" + yaml_commands(path)
        for binary, segment in command_lines(text):
            global_flags, subcommands = specs[binary]
            words = segment.split()[1:]
            positional = [w for w in words if not w.startswith("-")]
            # The subcommand is the longest known path made of the leading positional words.
            path_words = []
            for word in positional:
                candidate = " ".join(path_words + [word])
                if candidate in subcommands or any(k.startswith(candidate + " ") for k in subcommands):
                    path_words.append(word)
                else:
                    break
            sub = " ".join(path_words)
            if sub not in subcommands:
                # clap's own top-level flags (`quasar-node --version`) need no subcommand.
                flags = {w for w in words if w.startswith("--")}
                if not positional and flags and flags <= {"--help", "--version"}:
                    continue
                # A prose mention ("thresholdd listens …"), not a command line: it must then
                # not carry flags either.
                if any(w.startswith("--") for w in words) and binary == "quasar-node":
                    problems.append(f"{path}: unknown quasar-node subcommand in: {segment}")
                elif binary == "thresholdd" and any(w.startswith("--") for w in words):
                    sub = ""
                else:
                    continue
            allowed = subcommands.get(sub, set()) | global_flags | {"--help", "--version"}
            for word in words:
                if word.startswith("--"):
                    flag = word.split("=", 1)[0]
                    if not re.fullmatch(r"--[a-z0-9-]+", flag):
                        continue
                    if flag not in allowed:
                        problems.append(f"{path}: {binary} {sub or '(daemon)'} has no {flag}: {segment}")
    return problems


# ---------------------------------------------------------------------------------------------
# Compose file.

# compose's interpolation: $$, $NAME, ${NAME}, ${NAME:-default}, ${NAME-default},
# ${NAME:?err}, ${NAME?err}, ${NAME:+alt}, ${NAME+alt}.
INTERPOLATION = re.compile(r"\$(?:\$|[A-Za-z_][A-Za-z0-9_]*|\{[A-Za-z_][A-Za-z0-9_]*(?:(?::?[-?+])[^}]*)?\})")


def check_compose(paths):
    problems = []
    for path in paths:
        text = read(path)
        stripped = INTERPOLATION.sub("", text)
        for lineno, line in enumerate(stripped.splitlines(), 1):
            if "$" in line and not line.lstrip().startswith("#"):
                problems.append(f"{path}:{lineno}: invalid interpolation (write $$ for a literal $)")
        doc = yaml.safe_load(text)
        base = os.path.dirname(path)
        services = doc.get("services", {})
        volumes = set(doc.get("volumes", {}) or {})
        networks = set(doc.get("networks", {}) or {})
        subnets = []
        for net in (doc.get("networks") or {}).values():
            for cfg in ((net or {}).get("ipam") or {}).get("config", []):
                subnets.append(ipaddress.ip_network(re.sub(r"\$\{[^}]*:-([^}]*)\}", r"\1", cfg["subnet"])))
        for name, svc in services.items():
            for dep in svc.get("depends_on", {}) or {}:
                if dep not in services:
                    problems.append(f"{path}: {name} depends on unknown service {dep}")
            for mount in svc.get("volumes", []) or []:
                source = mount.split(":")[0] if isinstance(mount, str) else mount.get("source")
                if source.startswith((".", "/")):
                    if source.startswith(".") and not os.path.exists(os.path.join(base, source)):
                        problems.append(f"{path}: {name} mounts missing file {source}")
                elif source not in volumes:
                    problems.append(f"{path}: {name} uses undeclared volume {source}")
            nets = svc.get("networks", []) or []
            for net in nets:
                if net not in networks:
                    problems.append(f"{path}: {name} uses undeclared network {net}")
            if isinstance(nets, dict):
                for net, cfg in nets.items():
                    address = (cfg or {}).get("ipv4_address")
                    if address:
                        ip = ipaddress.ip_address(re.sub(r"\$\{[^}]*:-([^}]*)\}", r"\1", address))
                        if not any(ip in s for s in subnets):
                            problems.append(f"{path}: {name}'s address {ip} is outside the subnet")
            image = svc.get("image", "")
            if "quasar" in image and "build" not in svc:
                problems.append(f"{path}: {name} uses the quasar image without its build section")
    return problems


# ---------------------------------------------------------------------------------------------
# Dockerfile.


def default_ports():
    """Ports the README's node.toml example and thresholdd's default listen address use."""
    readme = read(os.path.join(REPO, "README.md"))
    p2p = re.search(r'p2p_listen = "[^"]*:(\d+)"', readme).group(1)
    api = re.search(r'api_listen = "[^"]*:(\d+)"', readme).group(1)
    daemon = re.search(r'DEFAULT_LISTEN: &str = "[^"]*:(\d+)"', src("thresholdd/src/lib.rs")).group(1)
    return {f"{p2p}/udp", f"{api}/tcp", f"{daemon}/tcp"}


def check_dockerfile(paths):
    from dockerfile_parse import DockerfileParser

    problems = []
    for path in paths:
        parser = DockerfileParser(path=path)
        args = {}
        stages = []
        for instr in parser.structure:
            if instr["instruction"] == "ARG" and "=" in instr["value"]:
                key, value = instr["value"].split("=", 1)
                args.setdefault(key.strip(), value.strip().strip('"'))
            if instr["instruction"] == "FROM":
                stages.append([])
            if stages:
                stages[-1].append(instr)

        def expand(value):
            return re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), value)

        if len(stages) < 2:
            problems.append(f"{path}: not a multi-stage build")
            continue
        builder, runtime = stages[0], stages[-1]
        runs = " ".join(i["value"] for i in builder if i["instruction"] == "RUN")
        for needle in ("cargo build", "--release", "--no-default-features", "-p quasar-node",
                       "-p quasar-thresholdd"):
            if needle not in runs:
                problems.append(f"{path}: the builder stage does not run `{needle}`")
        base = expand(runtime[0]["value"]).split()[0]
        if not re.fullmatch(r"debian:[a-z]+-slim(@sha256:[0-9a-f]+)?", base):
            problems.append(f"{path}: the runtime stage is {base}, not a slim Debian image")
        users = [expand(i["value"]) for i in runtime if i["instruction"] == "USER"]
        if not users:
            problems.append(f"{path}: the runtime stage sets no USER")
        elif users[-1].split(":")[0] in ("0", "root"):
            problems.append(f"{path}: the runtime stage runs as root")
        copied = []
        for instr in runtime:
            if instr["instruction"] == "ADD":
                problems.append(f"{path}: ADD in the runtime stage")
            if instr["instruction"] == "COPY":
                words = instr["value"].split()
                if not any(w.startswith("--from=") for w in words):
                    problems.append(f"{path}: the runtime stage copies from the build context")
                sources = [w for w in words if not w.startswith("--")][:-1]
                copied += [os.path.basename(s) for s in sources]
        if sorted(copied) != ["quasar-node", "thresholdd"]:
            problems.append(f"{path}: the runtime stage copies {copied}, not the two binaries")
        exposed = set()
        for instr in runtime:
            if instr["instruction"] == "EXPOSE":
                exposed |= {p if "/" in p else p + "/tcp" for p in instr["value"].split()}
        if exposed != default_ports():
            problems.append(f"{path}: EXPOSE {sorted(exposed)}, defaults are {sorted(default_ports())}")
        if not any(i["instruction"] == "VOLUME" for i in runtime):
            problems.append(f"{path}: the runtime stage declares no VOLUME")
        ignore = path + ".dockerignore"
        if not os.path.exists(ignore):
            problems.append(f"{path}: no {os.path.basename(ignore)} beside it")
        else:
            rules = read(ignore).split()
            for rule in (".git", "target"):
                if rule not in rules:
                    problems.append(f"{ignore}: does not exclude {rule}")
    return problems


# ---------------------------------------------------------------------------------------------
# node.toml.


def node_config_fields():
    text = src("node/src/config.rs")
    body = re.search(r"pub struct NodeConfig \{(.*?)\n\}", text, re.S).group(1)
    top = set(re.findall(r"pub (\w+):", body))
    remote = re.search(r"pub struct RemoteSignerConfig \{(.*?)\n\}", text, re.S).group(1)
    peer = re.search(r"pub struct PeerConfig \{(.*?)\n\}", text, re.S).group(1)
    return top, set(re.findall(r"pub (\w+):", remote)), set(re.findall(r"pub (\w+):", peer))


def check_nodetoml(paths):
    top, remote, peer = node_config_fields()
    problems = []
    for path in paths:
        try:
            doc = tomllib.loads(read(path))
        except tomllib.TOMLDecodeError as e:
            problems.append(f"{path}: {e}")
            continue
        for key, value in doc.items():
            if key not in top:
                problems.append(f"{path}: NodeConfig has no field {key}")
            elif key == "remote_signer":
                problems += [f"{path}: remote_signer has no field {k}" for k in value if k not in remote]
            elif key == "peers":
                for entry in value:
                    problems += [f"{path}: peers has no field {k}" for k in entry if k not in peer]
    return problems


# ---------------------------------------------------------------------------------------------
# Rendered Kubernetes manifests: what the schemas cannot say.

# Objects the operator creates (docs/operations.md), not the kustomization.
EXTERNAL = {("Secret", "quasar-validator-keys")}


def api_routes():
    return set(re.findall(r'\.route\(\s*"([^"]+)"', src("node/src/api.rs")))


def check_k8s(paths):
    problems = []
    routes = api_routes()
    for path in paths:
        objects = [o for o in yaml.safe_load_all(read(path)) if o]
        names = {(o["kind"], o["metadata"]["name"]) for o in objects} | EXTERNAL
        sets = [o for o in objects if o["kind"] == "StatefulSet"]
        if len(sets) != 1:
            problems.append(f"{path}: {len(sets)} StatefulSets, expected 1")
            continue
        sts = sets[0]
        spec, pod = sts["spec"], sts["spec"]["template"]["spec"]
        labels = sts["spec"]["template"]["metadata"]["labels"]

        def selects(selector):
            return selector and all(labels.get(k) == v for k, v in selector.items() if not k.startswith("statefulset."))

        if not spec.get("volumeClaimTemplates"):
            problems.append(f"{path}: no volumeClaimTemplates")
        if not pod.get("securityContext", {}).get("runAsNonRoot"):
            problems.append(f"{path}: the pod does not require runAsNonRoot")
        for container in pod.get("initContainers", []) + pod["containers"]:
            name = container["name"]
            sc = container.get("securityContext", {})
            if sc.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{path}: {name}: root file system not read-only")
            if sc.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{path}: {name}: privilege escalation allowed")
            if sc.get("capabilities", {}).get("drop") != ["ALL"]:
                problems.append(f"{path}: {name}: capabilities not dropped")
            res = container.get("resources", {})
            if not res.get("requests") or not res.get("limits"):
                problems.append(f"{path}: {name}: no resource requests and limits")
            ports = {p.get("name") for p in container.get("ports", [])}
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                http = container.get(probe, {}).get("httpGet")
                if http:
                    if http["path"] not in routes:
                        problems.append(f"{path}: {name}: {probe} GET {http['path']} is no API route")
                    if isinstance(http["port"], str) and http["port"] not in ports:
                        problems.append(f"{path}: {name}: {probe} port {http['port']} is not declared")
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref and ("Secret", ref["name"]) not in names:
                    problems.append(f"{path}: {name}: env {env['name']} uses missing Secret {ref['name']}")
        for volume in pod.get("volumes", []):
            for kind, key, field in (("ConfigMap", "configMap", "name"), ("Secret", "secret", "secretName")):
                if key in volume and (kind, volume[key][field]) not in names:
                    problems.append(f"{path}: volume {volume['name']} uses missing {kind} {volume[key][field]}")
        pdbs = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
        if len(pdbs) != 1 or pdbs[0]["spec"].get("maxUnavailable") != 1 or "minAvailable" in pdbs[0]["spec"]:
            problems.append(f"{path}: expected one PodDisruptionBudget with maxUnavailable 1 alone")
        elif not selects(pdbs[0]["spec"]["selector"]["matchLabels"]):
            problems.append(f"{path}: the PodDisruptionBudget does not select the validator pods")
        services = [o for o in objects if o["kind"] == "Service"]
        governing = [o for o in services if o["metadata"]["name"] == spec["serviceName"]]
        if not governing or governing[0]["spec"].get("clusterIP") != "None":
            problems.append(f"{path}: no headless Service {spec['serviceName']}")
        statefulset = sts["metadata"]["name"]
        for i in range(spec["replicas"]):
            own = [o for o in services if o["metadata"]["name"] == f"{statefulset}-{i}"]
            if not own or own[0]["spec"]["selector"].get("statefulset.kubernetes.io/pod-name") != f"{statefulset}-{i}":
                problems.append(f"{path}: no Service {statefulset}-{i} selecting pod {statefulset}-{i}")
        for service in services:
            if not selects(service["spec"]["selector"]):
                problems.append(f"{path}: Service {service['metadata']['name']} selects no validator pod")
    return problems


CHECKS = {
    "k8s": check_k8s,
    "metrics": check_metrics,
    "dashboard": check_dashboard,
    "commands": check_commands,
    "compose": check_compose,
    "dockerfile": check_dockerfile,
    "nodetoml": check_nodetoml,
}

if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in CHECKS:
        sys.exit(f"usage: check.py {{{'|'.join(CHECKS)}}} FILE...")
    try:
        found = CHECKS[sys.argv[1]](sys.argv[2:])
    except (json.JSONDecodeError, yaml.YAMLError, tomllib.TOMLDecodeError, OSError) as error:
        found = [f"{type(error).__name__}: {error}"]
    for problem in found:
        print(problem)
    sys.exit(1 if found else 0)
