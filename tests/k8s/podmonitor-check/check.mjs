// Validate every PodMonitor in the JSON files given (one Kubernetes object or a list per file) against the
// Prometheus Operator's CRD schema, as generated into @kubernetes-models/prometheus-operator.
// Prints "OK: <n> PodMonitor(s)" or one line per violation and exits 1.
import { readFileSync } from "node:fs";
import { PodMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor";

let checked = 0;
const problems = [];
for (const file of process.argv.slice(2)) {
  const doc = JSON.parse(readFileSync(file, "utf8"));
  for (const obj of Array.isArray(doc) ? doc : [doc]) {
    if (obj.kind !== "PodMonitor") continue;
    try {
      new PodMonitor(obj).validate();
      checked += 1;
    } catch (err) {
      problems.push(`${file}: PodMonitor ${obj.metadata?.name}: ${err.message}`);
    }
  }
}
if (problems.length) {
  console.error(problems.join("\n"));
  process.exit(1);
}
if (!checked) {
  console.error("no PodMonitor in the files given");
  process.exit(1);
}
console.log(`OK: ${checked} PodMonitor(s)`);
