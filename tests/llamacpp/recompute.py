# Recomputes each cell's option probabilities from the raw logprobs llama-server sent (proxy.log) and compares
# them with results.csv: the label token's alternatives, read as shown labels 1..5, mapped back through `shown`.
import csv, json, math, sys
rows = list(csv.DictReader(open("out/results.csv")))
log = [json.loads(l) for l in open("proxy.log")]
items = {"q1": "I like parties.", "q2": "I worry a lot.", "q3": "I am organised.", "q4": "I love art."}
names = {"p1": "Ann", "p2": "Bo", "p3": "Cy"}
worst, n = 0.0, 0
for r in rows:
    shown = r["shown"].split("|")
    opts_text = {"1": "Disagree strongly", "2": "Disagree", "3": "Neutral", "4": "Agree", "5": "Agree strongly"}
    want_list = "\n".join(f"{k+1}. {opts_text[c]}" for k, c in enumerate(shown))
    match = [e for e in log if items[r["item_id"]] in e["req"]["messages"][-1]["content"]
             and want_list in e["req"]["messages"][-1]["content"] and names[r["persona_id"]] in e["req"]["messages"][0]["content"]]
    assert len(match) == 1, (r["cell_id"], len(match))
    first = match[0]["resp"]["choices"][0]["logprobs"]["content"][0]
    mass = [0.0] * 5
    for alt in first["top_logprobs"]:
        t = alt["token"].strip().rstrip(".").lower()
        if t in {"1", "2", "3", "4", "5"}:
            mass[int(t) - 1] += math.exp(alt["logprob"])   # shown position
    tot = sum(mass)
    canon = {shown[k]: mass[k] / tot for k in range(5)}
    for cid in "12345":
        got = float(r["p_" + cid])
        worst = max(worst, abs(got - canon[cid])); n += 1
    print(r["cell_id"], r["order"], "shown", r["shown"], "written", r["option_id"], "pos", r["shown_position"])
print(f"{n} probabilities over {len(rows)} cells; largest difference {worst:.3g}")
