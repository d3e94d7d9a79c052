#!/usr/bin/env python3
"""Hand-written held-out evaluation set for the degeneration detector.

Every item here was written without looking at the detector's code or tests.
Run from the repository root:

    python3 triage/degeneration/testdata/heldout_written.py

It writes triage/degeneration/testdata/heldout_written.jsonl (next to this
script).  Deterministic: the only randomness comes from a seeded
random.Random.  Standard library only.

Record format (one JSON object per line):
    id, class, shape, label, text, finish_reason, messages, note

Degenerate shapes (label true):
    invented_turn_stripped, counting_loop, near_verbatim_loop, recursive_nesting
Healthy shapes (label false):
    healthy_table, healthy_list, healthy_dialogue, healthy_refrain,
    healthy_nesting, healthy_repetitive_code
"""
import calendar
import datetime as _dt
import json
import os
import random
import sys
from collections import Counter

R = random.Random(20250611)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "heldout_written.jsonl")

DEG_SHAPES = ("invented_turn_stripped", "counting_loop", "near_verbatim_loop",
              "recursive_nesting")
OK_SHAPES = ("healthy_table", "healthy_list", "healthy_dialogue", "healthy_refrain",
             "healthy_nesting", "healthy_repetitive_code")

ITEMS = []


def add(uid, shape, text, fr, prompt, note):
    assert shape in DEG_SHAPES or shape in OK_SHAPES, shape
    assert fr in ("stop", "length"), fr
    label = shape in DEG_SHAPES
    ITEMS.append({
        "id": "written/" + uid,
        "class": "written_degenerate" if label else "written_healthy",
        "shape": shape,
        "label": label,
        "text": text,
        "finish_reason": fr,
        "messages": [{"role": "user", "content": prompt}],
        "note": note,
    })


def T(s):
    """Drop the newline right after an opening triple quote and before the closing one."""
    return s.strip("\n")


def P(s):
    """Drop the newline right after an opening triple quote; keep the trailing ones (prefix blocks)."""
    return s.lstrip("\n")


def fill(prefix, gen, limit):
    """prefix + gen(0) + gen(1) + ... and cut at exactly `limit` characters
    (what a max_tokens cut looks like: anywhere, often mid-word)."""
    parts = [prefix]
    n = len(prefix)
    i = 0
    while n < limit:
        u = gen(i)
        parts.append(u)
        n += len(u)
        i += 1
    return "".join(parts)[:limit]


def picker(variants, rng, avoid_repeat=True):
    """Return gen(i) that picks one of `variants` at random, never the same twice in a row."""
    last = [None]

    def gen(i):
        while True:
            v = rng.choice(variants)
            if not avoid_repeat or v != last[0] or len(variants) == 1:
                last[0] = v
                return v
    return gen


# ============================================================================
# DEGENERATE 1: invented_turn_stripped
# The model answered, then kept going into a new chat turn; the serving stack
# stripped the special tokens, leaving bare role words (user / assistant /
# system / model) on their own line or glued to the previous sentence.
# ============================================================================

add("inv-reverse-list", "invented_turn_stripped", T('''
There are a few ways to get a reversed copy while leaving the original list untouched:

**1. Slicing (most common)**

```python
numbers = [1, 2, 3, 4, 5]
reversed_numbers = numbers[::-1]
print(reversed_numbers)  # [5, 4, 3, 2, 1]
print(numbers)           # [1, 2, 3, 4, 5]
```

**2. `reversed()` + `list()`**

```python
reversed_numbers = list(reversed(numbers))
```

`reversed()` returns an iterator, so wrap it in `list()` if you need an actual list. If you only need to loop backwards, you can use the iterator directly and skip the copy:

```python
for n in reversed(numbers):
    print(n)
```

Avoid `numbers.reverse()` here: it reverses the list in place and returns `None`.
user
How do I sort a dictionary by its values?
assistant
You can pass the dictionary's items to `sorted()` with a key function:

```python
scores = {"alice": 82, "bob": 95, "carol": 78}
by_value = dict(sorted(scores.items(), key=lambda kv: kv[1]))
print(by_value)  # {'carol': 78, 'alice': 82, 'bob': 95}
```

Add `reverse=True` to sort from highest to lowest. Since Python 3.7, dictionaries keep insertion order, so the result stays sorted.
'''), "stop",
    "How do I reverse a list in Python without modifying the original?",
    "After a complete answer a bare 'user' line introduces a question the user never asked, then a bare "
    "'assistant' line answers it: a stripped-template invented turn.")

add("inv-buttermilk-llama-glued", "invented_turn_stripped", (
    "No problem, buttermilk is easy to fake. Here are the best substitutes, per 1 cup of buttermilk:\n\n"
    "1. **Milk + lemon juice or vinegar**: Put 1 tablespoon of lemon juice or white vinegar in a measuring cup, "
    "then add milk up to the 1-cup line. Stir and let it sit for 5-10 minutes until it thickens slightly.\n"
    "2. **Plain yogurt + milk**: Whisk \u00be cup plain yogurt with \u00bc cup milk until smooth.\n"
    "3. **Sour cream + water**: Thin \u00be cup sour cream with \u00bc cup water.\n"
    "4. **Cream of tartar**: Whisk 1\u00be teaspoons cream of tartar into 1 cup of milk; mix it with the dry "
    "ingredients first to avoid lumps.\n\n"
    "Option 1 is the closest match for pancakes. The acid reacts with the baking soda the same way, so they'll "
    "still rise and come out fluffy. Hope this helps!user\n\n"
    "Can you also give me a vegan version of the whole pancake recipe?assistant\n\n"
    "Absolutely! Here's a simple vegan pancake recipe that makes about 8 medium pancakes:\n\n"
    "**Ingredients**\n- 1 cup (125 g) all-purpose flour\n- 1 tablespoon sugar\n- 2 teaspoons baking powder\n"
    "- \u00bc teaspoon salt\n- 1 cup soy or oat milk mixed with 1 tablespoon apple cider vinegar\n"
    "- 2 tablespoons neutral oil or melted vegan butter\n- 1 teaspoon vanilla extract\n\n"
    "**Instructions**\n1. Whisk the flour, sugar, baking powder and salt in a large bowl.\n"
    "2. In a separate jug, combine the curdled plant milk, oil and vanilla.\n"
    "3. Pour the wet ingredients into the dry and stir until just combined; a few lumps are fine.\n"
    "4. Heat a non-stick pan over medium heat and lightly oil it.\n"
    "5. Pour about \u00bc cup of batter per pancake and cook until bubbles form on the surface and the edges "
    "look set, about 2 minu"), "length",
    "I'm out of buttermilk for my pancake recipe. What can I use instead?",
    "Llama-3 style: 'Hope this helps!user' glues the role word to the last sentence, followed by an invented "
    "request and an 'assistant' reply to it, cut by max_tokens.")

add("inv-timezone-system", "invented_turn_stripped", T('''
Tokyo is **13 hours ahead** of New York during US daylight saving time (roughly mid-March to early November) and **14 hours ahead** the rest of the year. Japan doesn't observe daylight saving time, so the gap only changes when the clocks change in New York.

For example, when it's 9:00 AM on a Monday in New York in July, it's 10:00 PM Monday in Tokyo. In January, 9:00 AM in New York is 11:00 PM in Tokyo.

If you're scheduling a call, early morning in New York (7-9 AM) lines up with the evening in Tokyo, which usually works for both sides.
system
You are a helpful AI assistant named Aria. You answer questions about travel, time zones and scheduling. Be concise and friendly.
user
I have a meeting at 8pm Tokyo time on Thursday. What time is that in London?
assistant
In winter, 8:00 PM Thursday in Tokyo is 11:00 AM Thursday in London, since Tokyo is 9 hours ahead of GMT. During British Summer Time it's 12:00 PM (noon), because the gap shrinks to 8 hours.
'''), "stop",
    "What's the time difference between New York and Tokyo?",
    "A bare 'system' line with an invented system prompt ('You are a helpful AI assistant named Aria') starts "
    "a fake new conversation with its own 'user' and 'assistant' turns.")

add("inv-algebra-rounds", "invented_turn_stripped", T('''
Let's solve 3x + 7 = 22 step by step.

**Step 1: Subtract 7 from both sides**
3x + 7 - 7 = 22 - 7
3x = 15

**Step 2: Divide both sides by 3**
3x / 3 = 15 / 3
x = 5

**Check:** 3(5) + 7 = 15 + 7 = 22 \u2713

So **x = 5**.
user
Now solve 5x - 4 = 2x + 11
assistant
Move the x terms to one side and the constants to the other:

5x - 2x = 11 + 4
3x = 15
x = 5

Check: 5(5) - 4 = 21 and 2(5) + 11 = 21 \u2713
user
What about x^2 - 5x + 6 = 0?
assistant
This quadratic factors nicely. We need two numbers that multiply to 6 and add to -5: those are -2 and -3.

(x - 2)(x - 3) = 0

So x = 2 or x = 3.
user
Thanks! Can you give me a harder one to practice?
assistant
Sure! Try this one:

Solve for x: 2x\u00b2 + 3x - 9 = 0

Hint: it factors, but you may find the quadratic formula easier.
user
Is the answer x = 1.5 and x = -3?
assistant
Yes, exactly! Let's che
'''), "length",
    "Solve 3x + 7 = 22 and show the steps.",
    "One equation was asked; after solving it the text invents four further user/assistant rounds on bare role "
    "lines until max_tokens.")

add("inv-canberra-short", "invented_turn_stripped", T('''
The capital of Australia is **Canberra**. Many people guess Sydney or Melbourne, but Canberra was purpose-built as a compromise between those two rival cities and became the seat of government in 1927.
user

thanks!
assistant

You're welcome! Let me know if you have any other questions.
'''), "stop",
    "What's the capital of Australia?",
    "Short but degenerate: after the answer, a bare 'user' line with an invented 'thanks!' and an 'assistant' "
    "reply that the real user never saw a turn for.")

add("inv-photosynthesis-tail", "invented_turn_stripped", T('''
Photosynthesis is the process plants, algae and some bacteria use to turn light energy into chemical energy. Inside the chloroplasts, the green pigment chlorophyll absorbs sunlight, and that energy is used to split water molecules, releasing oxygen as a by-product. The energy captured this way is then used to combine carbon dioxide from the air into glucose, a sugar the plant uses for fuel and as a building block for growth. In simple terms: light + water + carbon dioxide \u2192 sugar + oxygen, which is why photosynthesis is the foundation of almost every food chain and the source of the oxygen we breathe.

user
Can you explain it like I'm five?
'''), "stop",
    "Give me a one-paragraph summary of what photosynthesis is.",
    "Subtle: a good paragraph, then the model writes the next user request itself ('user' line + 'Can you "
    "explain it like I'm five?') and stops there.")

add("inv-bash-glued-fence", "invented_turn_stripped", T('''
```bash
find . -name '*.py' -print0 | xargs -0 wc -l | tail -n 1
```

How it works:
- `find . -name '*.py' -print0` lists every Python file under the current directory, separated by NUL bytes so filenames with spaces are handled safely.
- `xargs -0 wc -l` runs `wc -l` on them and prints a line count per file plus a total.
- `tail -n 1` keeps only the `total` line.

If you have a lot of files, `xargs` may split them into several `wc` calls and you'll get more than one total. In that case this is more robust:

```bash
find . -name '*.py' -exec cat {} + | wc -l
```user

now make it exclude the venv folderassistant

Use `-not -path` to skip it:

```bash
find . -name '*.py' -not -path './venv/*' -exec cat {} + | wc -l
```

To skip several folders, add one `-not -path` per folder, for example `-not -path './.git/*'`.
'''), "stop",
    "Write a bash one-liner that counts the lines in all .py files in a directory recursively.",
    "The role word 'user' is glued to the closing code fence and 'assistant' to the invented request: the model "
    "wrote the user's follow-up ('exclude the venv folder') and answered it.")

add("inv-landlord-email-rounds", "invented_turn_stripped", T('''
Subject: Heater repair

Hi Mr. Patel,

I hope you're well. I wanted to check in about the heater in my apartment (Unit 4B), which stopped working recently. Could you let me know when a repair is scheduled? It's been getting quite cold in the evenings.

Thanks very much,
Jordan

user
Make it more formal and mention that it's been two weeks.

assistant
Subject: Request for Heater Repair - Unit 4B

Dear Mr. Patel,

I am writing to follow up on the heater in my apartment, Unit 4B, which stopped working two weeks ago. As temperatures have dropped considerably, the apartment has become uncomfortably cold, particularly at night.

I would be grateful if you could confirm when a technician will be able to carry out the repair. I am happy to arrange access at a time that suits you.

Thank you for your attention to this matter.

Yours sincerely,
Jordan Reyes

user
Perfect. Now translate it into Spanish.

assistant
Asunto: Solicitud de reparaci\u00f3n de la calefacci\u00f3n - Unidad 4B

Estimado Sr. Patel:

Le escribo para dar seguimiento a la calefacci\u00f3n de mi apartamento, la unidad 4B, que dej\u00f3 de funcionar hace dos semanas. Como las temperaturas han bajado considerablemente, el apartamento est\u00e1 muy fr\u00edo, sobre todo por la no
'''), "length",
    "Write a short email to my landlord asking when the broken heater will be fixed.",
    "The requested email is complete, then two invented rounds (user asks for a formal version, then a "
    "translation) appear on bare 'user'/'assistant' lines, cut by max_tokens.")

add("inv-cookie-dough-cut-in-user", "invented_turn_stripped", T('''
It's best not to. Raw cookie dough carries two separate risks:

1. **Raw eggs** can contain *Salmonella*. The risk from any single egg is low, but it isn't zero, and it's higher for young children, pregnant people, older adults and anyone with a weakened immune system.
2. **Raw flour** is the one people often forget. Flour is a raw agricultural product that isn't treated to kill bacteria, and it has been linked to several *E. coli* outbreaks in the US.

If you love eating dough, look for products labelled "safe to eat raw", or make an edible version at home with heat-treated flour (bake it at 175 \u00b0C / 350 \u00b0F for about 5 minutes, or microwave it until it reaches 74 \u00b0C / 165 \u00b0F) and no eggs.
user
What about raw eggs in homemade mayonnaise? My grandmother always made it that way and nobody ever got sick, but I read somewhere that pasteurized eggs are
'''), "length",
    "Is it safe to eat raw cookie dough?",
    "Cut by max_tokens inside an invented user turn: after the answer a bare 'user' line starts a long "
    "made-up follow-up question about mayonnaise.")

add("inv-translate-lingo-system", "invented_turn_stripped", T('''
**German:** Wo ist der Bahnhof?
**French:** O\u00f9 est la gare ?

Note that French typography puts a space before the question mark.
system
You are a helpful AI assistant named Lingo, created to help travelers with translations. Always include a pronunciation guide.
user
How do I say 'I would like a ticket to Berlin'?
assistant
**German:** Ich m\u00f6chte eine Fahrkarte nach Berlin. (ikh MERKH-tuh EYE-nuh FAR-kar-tuh nakh bair-LEEN)
**French:** Je voudrais un billet pour Berlin. (zhuh voo-DRAY uhn bee-YAY poor bair-LAN)
user
And 'how much does it cost'?
assistant
**German:** Wie viel kostet das? (vee feel KOS-tet dass)
**French:** Combien \u00e7a co\u00fbte ? (kom-BYAN sa koot)
'''), "stop",
    "Translate 'Where is the train station?' into German and French.",
    "After the two translations a 'system' line injects an invented persona prompt and two fake user requests "
    "with answers follow on bare role lines.")

add("inv-rome-long-tail", "invented_turn_stripped", T('''
There was no single cause. Historians usually point to a combination of internal weaknesses and external pressures that built up over roughly two centuries before the last western emperor was deposed in 476 CE.

**1. Political instability**
In the third century alone, Rome went through more than twenty emperors, most of whom died violently. Power increasingly depended on the loyalty of the army rather than on any stable rule of succession, so generals fought each other instead of defending the frontiers. Even after Diocletian and Constantine restored some order, civil wars kept draining resources.

**2. Economic strain**
Paying and supplying a large standing army was enormously expensive. Emperors debased the silver coinage to cover the costs, which fed inflation. Heavy taxation fell hardest on small farmers, many of whom gave up their land to large estate owners. Trade across the Mediterranean shrank, and many cities in the west declined.

**3. The division of the empire**
In 395 the empire was permanently split between the sons of Theodosius I. The eastern half, centred on Constantinople, was richer, more urbanised and easier to defend. The western half had a longer, more exposed frontier along the Rhine and Danube and a weaker tax base.

**4. Migration and military pressure**
The arrival of the Huns in the late fourth century pushed Gothic and other peoples into Roman territory. The Goths defeated a Roman army at Adrianople in 378, and the Visigoths sacked Rome itself in 410. The Vandals took North Africa, the West's grain supply and a major source of tax, in 439 and sacked Rome again in 455. The western government came to rely on federated troops and their commanders, who eventually held the real power.

**5. Loss of control**
By the mid-fifth century, Britain, most of Spain, much of Gaul and North Africa were effectively out of imperial hands. Emperors in Ravenna were often puppets of generals such as Ricimer. In 476 the commander Odoacer deposed the young emperor Romulus Augustulus and sent the imperial regalia to Constantinople, declining to name a new western emperor.

**A note on interpretation**
Older accounts, most famously Edward Gibbon's, stressed moral decline and the rise of Christianity. Most modern historians are sceptical of those explanations and prefer to talk about a gradual transformation: Roman law, language and institutions survived in the successor kingdoms, and the eastern empire continued for almost another thousand years, until 1453.

In short, the West fell because a shrinking economy could no longer pay for the defence of a vast frontier, while political infighting kept the state from responding effectively to the peoples moving across it.
user
Who was the last emperor of the Western Roman Empire?
'''), "stop",
    "Why did the Western Roman Empire fall?",
    "Hard: a long, excellent answer whose only defect is the final two lines, a bare 'user' role line and a "
    "follow-up question the user never asked.")

add("inv-scifi-qwen-system", "invented_turn_stripped", T('''
If you loved *The Martian*, here are three books that scratch the same itch:

1. **Project Hail Mary** by Andy Weir: same author, same problem-solving-against-the-clock energy, and a lot of humour. A science teacher wakes up alone on a spaceship with no memory of how he got there.
2. **Seveneves** by Neal Stephenson: the Moon explodes and humanity has two years to get people into orbit. It's long and very engineering-heavy, which is exactly the appeal.
3. **The Long Way to a Small, Angry Planet** by Becky Chambers: less survival, more found family aboard a tunnelling ship. Pick this one if what you liked most was the crew banter.
system
You are Qwen, created by Alibaba Cloud. You are a helpful assistant.
user
Which of these is the easiest to read?
assistant
*Project Hail Mary* is the easiest. It has short chapters, a conversational first-person voice and explains its science as it goes, much like *The Martian*. *Seveneves* is the most demanding of the three.
'''), "stop",
    "Recommend three sci-fi novels for someone who loved The Martian.",
    "A leaked 'system' line with a default system prompt ('You are Qwen, created by Alibaba Cloud') followed by "
    "an invented user question and its answer.")

add("inv-go-rust-python-glued", "invented_turn_stripped", T('''
Use `bufio.Scanner`; it's the idiomatic way:

```go
package main

import (
	"bufio"
	"fmt"
	"log"
	"os"
)

func main() {
	f, err := os.Open("input.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fmt.Println(scanner.Text())
	}
	if err := scanner.Err(); err != nil {
		log.Fatal(err)
	}
}
```

One gotcha: `Scanner` has a default maximum token size of 64 KB. If your file has very long lines, call `scanner.Buffer(make([]byte, 1024*1024), 1024*1024)` before scanning. Good luck!user

what about in rust?assistant

In Rust, wrap the file in a `BufReader` and use `lines()`:

```rust
use std::fs::File;
use std::io::{self, BufRead, BufReader};

fn main() -> io::Result<()> {
    let file = File::open("input.txt")?;
    for line in BufReader::new(file).lines() {
        println!("{}", line?);
    }
    Ok(())
}
```

Each item is an `io::Result<String>`, hence the `?`. That's it!user

and python?assistant

In Python it's the simplest of all:

```python
with open("input.txt") as f:
    for line in f:
        print(line.rstrip())
```

The file object is an itera
'''), "length",
    "How do I read a file line by line in Go?",
    "Llama-3 style glued roles ('Good luck!user', 'what about in rust?assistant'): two invented user follow-ups "
    "(Rust, Python) and answers, cut by max_tokens.")

add("inv-monday-quote-thanks-loop", "invented_turn_stripped", T('''
"The secret of getting ahead is getting started." - Mark Twain

A small first step counts. Pick the one task you've been putting off and give it ten minutes before you open your inbox. Have a great Monday!
user
That's great, thank you!
assistant
You're very welcome! Have a fantastic week!
user
You too!
assistant
Thank you! Take care and good luck with everything this week.
user
Thanks, bye!
assistant
Goodbye! \U0001F60A
user
'''), "stop",
    "Give me a motivational quote for Monday morning.",
    "The model plays both sides of a goodbye exchange on bare 'user'/'assistant' lines and ends on a dangling "
    "'user' line.")

add("inv-sql-top5-index", "invented_turn_stripped", T('''
```sql
SELECT c.customer_id,
       c.name,
       SUM(o.amount) AS total_spent
FROM customers AS c
JOIN orders AS o ON o.customer_id = c.customer_id
GROUP BY c.customer_id, c.name
ORDER BY total_spent DESC
LIMIT 5;
```

This joins each order to its customer, adds up the order amounts per customer, sorts from highest to lowest and keeps the first five rows. On SQL Server, use `SELECT TOP 5 ...` instead of `LIMIT 5`. If two customers tie for fifth place and you want both, use a window function such as `DENSE_RANK()` instead.
user

How can I make this query faster on a table with 50 million orders?
assistant

On a table that size, the biggest wins usually come from indexing and pre-aggregation:

1. **Composite index on `orders(customer_id, amount)`**: lets the database compute the SUM from the index alone (a covering index) without touching the table rows.
2. **Filter early**: if you only care about recent orders, add a `WHERE order_date >= ...` clause and put `order_date` in the index.
3. **Materialized
'''), "length",
    "Write a SQL query that returns the top 5 customers by total order amount.",
    "A 'user' line followed by an empty line and an invented performance question, then an 'assistant' answer "
    "cut by max_tokens.")

add("inv-haiku-rounds", "invented_turn_stripped", T('''
Steam curls from the cup,
dark and bitter, then sweet warmth.
The day can begin.
user
Now one about tea.
assistant
Leaves unfurl slowly
in the amber quiet of
an afternoon pot.
user
And one about hot chocolate.
assistant
Marshmallows drifting,
small clouds on a cocoa sea.
Mittens on the rail.
user
One more, about water.
assistant
Clear and without taste,
it takes the shape of the glass
and the shape of rain.
user
Can you write a longer poem that connects all four drinks?
assistant
Morning starts with coffee, black,
a spark to get the engine
'''), "length",
    "Write a haiku about coffee.",
    "One haiku was requested; the text then invents four more user requests on bare 'user' lines and answers "
    "each, until max_tokens.")

add("inv-hydration-glued-bullet", "invented_turn_stripped", T('''
Here are some easy ways to drink more water during the workday:

- Keep a refillable bottle on your desk where you can see it.
- Drink a full glass when you arrive, before you open your email.
- Tie drinking to habits you already have: a few sips after every meeting or phone call.
- Set a gentle reminder on your phone or watch every hour.
- If plain water bores you, add lemon, cucumber or a few mint leaves.
- Eat water-rich snacks like cucumber, watermelon or oranges.user

What are signs of dehydration I should watch for?assistant

Common early signs include:
- Thirst and a dry mouth
- Dark yellow urine
- Headache
- Fatigue or trouble concentrating
- Dizziness when standing up

If you notice confusion, a rapid heartbeat or very little urine, seek medical help.
'''), "stop",
    "Quick tips to stay hydrated at work?",
    "'user' glued to the end of the last bullet, then an invented dehydration question glued to 'assistant' "
    "and answered: a template turn with special tokens stripped.")

add("inv-apr-gemma-model", "invented_turn_stripped", T('''
APR stands for **annual percentage rate**. For a mortgage, it expresses the total yearly cost of borrowing as a percentage of the loan amount, including not just the interest but also most of the up-front fees you pay to get the loan: origination fees, discount points, mortgage broker fees and some closing costs.

Because it folds those fees in, the APR is almost always a little higher than the advertised interest rate. For example, a 30-year loan at a 6.5% interest rate with $4,000 in fees might have an APR of around 6.6%.

Lenders in the US are required to disclose the APR, which makes it a useful way to compare offers on an equal footing.
user
Is APR the same as the interest rate?
model
Not quite. The interest rate determines your monthly principal-and-interest payment. The APR is a broader measure that spreads the loan's fees over its life, so it shows the true cost of borrowing. Two loans with the same interest rate can have different APRs if one charges higher fees.
user
so which one should I compare between lenders?
model
Compare APRs when you plan to keep the loan for most of its term, because the fees get spread over many years. If you expect to sell or refinance within a few years, look more closely at the up-front fees themselves, because the APR assumes you keep the loan for the full
'''), "length",
    "Explain what a mortgage APR is.",
    "Gemma-style stripped template: bare 'user' and 'model' role lines carry two invented follow-up rounds "
    "after the complete answer, cut by max_tokens.")


# ============================================================================
# DEGENERATE 2: counting_loop
# Items repeat one template and only a counter changes, running to max_tokens
# or far past what was asked.
# ============================================================================

_planets = P('''
Here's a table of the eight planets in our solar system:

| # | Planet | Known moons | Avg. distance from Sun (AU) |
|---|--------|-------------|-----------------------------|
| 1 | Mercury | 0 | 0.39 |
| 2 | Venus | 0 | 0.72 |
| 3 | Earth | 1 | 1.00 |
| 4 | Mars | 2 | 1.52 |
| 5 | Jupiter | 95 | 5.20 |
| 6 | Saturn | 146 | 9.58 |
| 7 | Uranus | 28 | 19.22 |
| 8 | Neptune | 16 | 30.05 |
''')
add("cnt-planets-table", "counting_loop",
    fill(_planets, lambda i: "| {0} | {0} | {0} | {0} |\n".format(9 + i), 1900), "length",
    "Make a markdown table of the planets with their number of moons and distance from the Sun.",
    "After the 8 real planets the table continues with rows like '| 41 | 41 | 41 | 41 |': every cell is just "
    "the row counter, until max_tokens.")

_bread = P('''
Here's a simple no-knead bread recipe.

**Ingredients**
- 3 cups (400 g) bread flour
- 1\u00bd tsp salt
- \u00bd tsp instant yeast
- 1\u00bd cups (350 ml) warm water

**Method**

Step 1: In a large bowl, whisk together the flour, salt and yeast.
Step 2: Pour in the warm water and stir with a wooden spoon until a shaggy, sticky dough forms.
Step 3: Cover the bowl and leave it at room temperature for 12-18 hours, until the surface is bubbly.
Step 4: Turn the dough out onto a floured surface and fold it over itself a few times to form a ball.
Step 5: Place a lidded cast-iron pot in the oven and preheat to 230 \u00b0C (450 \u00b0F) for 30 minutes.
Step 6: Add the flour and mix well.
''')
add("cnt-bread-steps", "counting_loop",
    fill(_bread, lambda i: "Step {}: Add the flour and mix well.\n".format(7 + i), 2600), "length",
    "Give me a recipe for no-knead bread with numbered steps.",
    "From step 6 on every step is 'Add the flour and mix well.' with only the step number increasing, into "
    "the 50s, until max_tokens.")

_users_json = P('''
Here are 5 sample user records in JSON:

```json
[
  {"id": 1, "name": "Maria Lopez", "email": "maria.lopez@example.com", "age": 34, "country": "ES"},
  {"id": 2, "name": "Kenji Watanabe", "email": "kenji.w@example.com", "age": 28, "country": "JP"},
  {"id": 3, "name": "Amara Okafor", "email": "amara.okafor@example.com", "age": 41, "country": "NG"},
  {"id": 4, "name": "Lukas Becker", "email": "lukas.becker@example.com", "age": 23, "country": "DE"},
  {"id": 5, "name": "Priya Nair", "email": "priya.nair@example.com", "age": 37, "country": "IN"},
''')
add("cnt-json-users-ids", "counting_loop",
    fill(_users_json, lambda i: '  {{"id": {}, "name": "John Doe", "email": "john.doe@example.com", "age": 30, '
         '"country": "US"}},\n'.format(6 + i), 4300), "length",
    "Generate 5 sample user records in JSON for testing my API.",
    "Five distinct records were asked and given; then records identical except for an incrementing id run on "
    "to max_tokens.")

add("cnt-count-to-ten", "counting_loop",
    ("Sure! Counting to 10:\n\n" + ", ".join(str(i) for i in range(1, 400)))[:1540], "length",
    "Count to 10.",
    "'Count to 10' keeps counting past 300 until max_tokens: runaway counter far beyond the request.")

_sleep = P('''
Here are 10 tips to improve your sleep:

1. **Keep a consistent schedule.** Go to bed and wake up at the same time every day, including weekends.
2. **Watch the caffeine.** Avoid coffee, tea and energy drinks after about 2 PM; caffeine can stay in your system for 6-8 hours.
3. **Make your bedroom dark, cool and quiet.** Around 18 \u00b0C (65 \u00b0F) is ideal for most people.
4. **Limit screens before bed.** Try to put your phone away 30-60 minutes before sleep.
5. **Get morning daylight.** Ten minutes of sunlight soon after waking helps set your body clock.
6. **Get enough sleep every night.**
''')
add("cnt-sleep-tips-same", "counting_loop",
    fill(_sleep, lambda i: "{}. **Get enough sleep every night.**\n".format(7 + i), 2100), "length",
    "Give me 10 tips to improve my sleep.",
    "Ten tips were asked; from tip 6 every item is the same 'Get enough sleep every night.' with the number "
    "climbing past 40, cut by max_tokens.")

_emp_csv = P('''
Here's a sample CSV with 5 employees:

```csv
id,name,department,salary,start_date
1,Alice Moreau,Engineering,98000,2019-03-11
2,Ben Carter,Marketing,67000,2021-07-01
3,Chloe Zhang,Finance,82000,2018-11-19
4,David Osei,Engineering,105000,2017-02-06
5,Elena Petrova,HR,61000,2022-09-12
''')
add("cnt-csv-employees", "counting_loop",
    fill(_emp_csv, lambda i: "{},John Smith,Engineering,75000,2020-01-01\n".format(6 + i), 3000), "length",
    "Give me a sample CSV of 5 employees with name, department, salary and start date.",
    "After the 5 requested rows the CSV keeps emitting 'N,John Smith,Engineering,75000,2020-01-01' with only "
    "the first column incrementing, until max_tokens.")

_seven = ["Here are 10 practice questions for the 7 times table:\n"]
for _k, _m in enumerate([3, 7, 1, 9, 4, 12, 6, 10, 8, 2], 1):
    _seven.append("{}. What is 7 \u00d7 {}?".format(_k, _m))
for _k in range(11, 61):
    _seven.append("{}. What is 7 \u00d7 8?".format(_k))
add("cnt-times-table-stops-60", "counting_loop", "\n".join(_seven), "stop",
    "Give me 10 practice questions for the 7 times table.",
    "Subtle, stops on its own: the 10 requested questions are fine, then questions 11-60 are all 'What is "
    "7 \u00d7 8?' with only the number changing.")

_workout = P('''
Here's a 7-day beginner workout plan:

**Day 1: Full-body strength**: 3 rounds of 10 squats, 8 push-ups (knees are fine), 10 glute bridges, 20-second plank.
**Day 2: Cardio**: 25-30 minutes of brisk walking or easy cycling.
**Day 3: Mobility**: 20 minutes of gentle stretching focusing on hips, hamstrings and shoulders.
**Day 4: Full-body strength**: same as Day 1, but add a fourth round if you feel good.
**Day 5: Cardio intervals**: 5-minute warm-up, then 6 \u00d7 (1 minute fast, 2 minutes easy), 5-minute cool-down.
**Day 6: Active recovery**: a relaxed walk or a swim.
**Day 7: Rest and recovery.**
''')
add("cnt-workout-days", "counting_loop",
    fill(_workout, lambda i: "**Day {}: Rest and recovery.**\n".format(8 + i), 2500), "length",
    "Make me a 7-day beginner workout plan.",
    "A 7-day plan was asked; it continues with 'Day N: Rest and recovery.' for day 8, 9, 10 ... past day 60, "
    "until max_tokens.")

_inserts = P('''
```sql
INSERT INTO products (id, name, price, stock) VALUES (1, 'Wireless Mouse', 24.99, 150);
INSERT INTO products (id, name, price, stock) VALUES (2, 'Mechanical Keyboard', 89.00, 42);
INSERT INTO products (id, name, price, stock) VALUES (3, 'USB-C Hub', 34.50, 75);
''')
add("cnt-sql-inserts", "counting_loop",
    fill(_inserts, lambda i: "INSERT INTO products (id, name, price, stock) VALUES ({}, 'Product', 9.99, 100);\n"
         .format(4 + i), 3500), "length",
    "Write INSERT statements to add 3 sample products to my products table (id, name, price, stock).",
    "Three inserts were requested; after them the same INSERT with name 'Product' repeats with only the id "
    "increasing, until max_tokens.")

_novel = P('''
Here's an 8-chapter outline for your mystery novel:

**Chapter 1: The Letter**
Retired detective Ines Varga receives an unsigned letter claiming her last case, closed twenty years ago, convicted the wrong man.

**Chapter 2: Old Files**
Ines visits the archive and discovers that a key witness statement is missing from the case file.

**Chapter 3: The Witness**
She tracks down the witness, now a nervous florist, who admits she was pressured into her testimony.

**Chapter 4: Pressure**
Someone breaks into Ines's flat and takes nothing but her old notebooks.

**Chapter 5: The Journey Continues**
The heroes continue their journey.

''')
add("cnt-novel-chapters", "counting_loop",
    fill(_novel, lambda i: "**Chapter {}: The Journey Continues**\nThe heroes continue their journey.\n\n"
         .format(6 + i), 3200), "length",
    "Outline an 8-chapter mystery novel about a retired detective.",
    "After four real chapters every chapter is 'The Journey Continues / The heroes continue their journey.' "
    "with an incrementing number, far past the 8 requested, until max_tokens.")

_pytest = P('''
Here are some tests for your `add` function:

```python
import pytest
from calc import add


def test_add_positive_numbers():
    assert add(2, 3) == 5


def test_add_negative_numbers():
    assert add(-4, -6) == -10


def test_add_zero():
    assert add(0, 7) == 7


def test_add_floats():
    assert add(0.1, 0.2) == pytest.approx(0.3)


''')
add("cnt-pytest-case-n", "counting_loop",
    fill(_pytest, lambda i: "def test_case_{}():\n    assert add(2, 3) == 5\n\n\n".format(5 + i), 3700),
    "length",
    "Write pytest tests for my add(a, b) function.",
    "Four sensible tests, then test_case_5, test_case_6, ... with the identical body 'assert add(2, 3) == 5' "
    "until max_tokens: only the counter in the name changes.")

_refs = P('''
**References**

[1] LeCun, Y., Bengio, Y., & Hinton, G. (2015). Deep learning. *Nature*, 521(7553), 436-444.

[2] Goodfellow, I., Bengio, Y., & Courville, A. (2016). *Deep Learning*. MIT Press.

[3] Krizhevsky, A., Sutskever, I., & Hinton, G. E. (2012). ImageNet classification with deep convolutional neural networks. *Advances in Neural Information Processing Systems*, 25.

[4] Vaswani, A., Shazeer, N., Parmar, N., et al. (2017). Attention is all you need. *Advances in Neural Information Processing Systems*, 30.

''')
add("cnt-references-same", "counting_loop",
    fill(_refs, lambda i: "[{}] Goodfellow, I., Bengio, Y., & Courville, A. (2016). *Deep Learning*. MIT Press.\n\n"
         .format(5 + i), 3300), "length",
    "Add a references section with 4 sources for my essay on deep learning (APA style).",
    "Four references were asked and given; the same Goodfellow reference then repeats as [5], [6], [7] ... "
    "with only the bracket number changing, until max_tokens.")

_company = P('''
**Brightloom Robotics: A Company History**

**2015:** Founders Tess Adeyemi and Marco Lind build their first warehouse-sorting robot in a rented garage in Rotterdam.
**2016:** A pilot with a regional grocery chain proves the robots can cut sorting time by 40%.
**2017:** Brightloom raises a \u20ac4 million seed round and hires its first twenty engineers.
**2018:** The Loom-2 robot launches; a firmware bug causes the infamous "dancing robots" recall.
**2019:** Expansion into Germany and Poland. Headcount passes 150.
**2020:** Pandemic-driven e-commerce demand triples orders overnight.
**2021:** The company continues to grow.
''')
add("cnt-company-years", "counting_loop",
    fill(_company, lambda i: "**{}:** The company continues to grow.\n".format(2022 + i), 2400), "length",
    "Write a short fictional company history for a robotics startup founded in 2015 (for a game I'm designing).",
    "A good timeline to 2020, then '<year>: The company continues to grow.' for every following year into the "
    "2060s: only the year changes, until max_tokens.")

_study = P('''
Here's a 4-week study plan for the AWS Solutions Architect Associate exam:

| Week | Focus | Activities | Hours |
|------|-------|------------|-------|
| Week 1 | Core services: EC2, S3, IAM, VPC basics | Video course sections 1-4, hands-on labs | 8h |
| Week 2 | Databases, storage classes, networking deep-dive | RDS/DynamoDB labs, VPC peering lab | 9h |
| Week 3 | High availability, decoupling, security | SQS/SNS labs, practice test #1 | 10h |
| Week 4 | Review | Practice problems | 2h |
''')
add("cnt-study-weeks", "counting_loop",
    fill(_study, lambda i: "| Week {} | Review | Practice problems | 2h |\n".format(5 + i), 2300), "length",
    "Create a 4-week study plan for the AWS Solutions Architect Associate exam as a table.",
    "The 4-week table keeps going with 'Week N | Review | Practice problems | 2h' rows for week 5 onwards, "
    "identical except for the week number, until max_tokens.")

_faq = [T('''
**Frequently Asked Questions**

**Q1: What areas do you cover?**
We currently walk dogs in Northside, Riverside and the Old Town, within about 3 km of the city centre.

**Q2: How long is a walk?**
Standard walks are 30 minutes; you can book 60-minute adventure walks for high-energy breeds.

**Q3: Do you walk dogs in groups?**
Only if you want us to. Solo walks are the default, and group walks are limited to four dogs that have met before.

**Q4: What happens if it rains?**
We walk in all weather except thunderstorms or extreme heat. Your dog gets a towel-down before going back inside.

**Q5: Are your walkers insured?**
Yes, all our walkers are fully insured.
''')]
for _q in range(6, 32):
    _faq.append("**Q{}: Are your walkers insured?**\nYes, all our walkers are fully insured.".format(_q))
add("cnt-faq-insured-stop", "counting_loop", "\n\n".join(_faq), "stop",
    "Write an FAQ section (5 questions) for my dog-walking service website.",
    "Five FAQ entries were asked; Q5 'Are your walkers insured?' is then repeated as Q6 ... Q31 with the same "
    "answer, and the text stops by itself.")

_yaml = P('''
Here's a YAML config with three backup jobs:

```yaml
backup_jobs:
  - id: 1
    name: postgres-nightly
    source: /var/lib/postgresql/data
    destination: s3://acme-backups/postgres/
    schedule: "0 2 * * *"
    retention_days: 14
    enabled: true
  - id: 2
    name: uploads-hourly
    source: /srv/app/uploads
    destination: s3://acme-backups/uploads/
    schedule: "0 * * * *"
    retention_days: 3
    enabled: true
  - id: 3
    name: config-weekly
    source: /etc/app
    destination: s3://acme-backups/config/
    schedule: "30 3 * * 0"
    retention_days: 90
    enabled: false
''')
add("cnt-yaml-backup-jobs", "counting_loop",
    fill(_yaml, lambda i: "  - id: {}\n    name: backup-job\n    source: /data\n    destination: s3://acme-backups/\n"
         "    schedule: \"0 2 * * *\"\n    retention_days: 7\n    enabled: true\n".format(4 + i), 4200), "length",
    "Write a YAML config listing 3 backup jobs with name, source, destination, schedule and retention.",
    "Three jobs were asked and written; then identical 'backup-job' entries repeat with only the id "
    "incrementing, until max_tokens.")

_log = P('''
Here's what a typical Python traceback looks like when it ends up in a log file:

```
2024-03-12 14:22:05,118 INFO  worker: starting batch run (pid=4812)
2024-03-12 14:22:05,902 ERROR worker: batch 117 failed
Traceback (most recent call last):
  File "/srv/app/worker.py", line 88, in run_batch
    rows = load_rows(batch_id)
  File "/srv/app/db.py", line 41, in load_rows
    return cursor.fetchall()
psycopg2.OperationalError: server closed the connection unexpectedly
2024-03-12 14:22:07,341 INFO  worker: processed batch 118 (ok)
''')
add("cnt-log-batches", "counting_loop",
    fill(_log, lambda i: "2024-03-12 14:22:07,341 INFO  worker: processed batch {} (ok)\n".format(119 + i), 3900),
    "length",
    "Show me an example of a Python traceback in a log file.",
    "After the example traceback the log repeats one line with the same timestamp and only the batch number "
    "incrementing, hundreds of times until max_tokens.")

_cont = ["The seven continents, from largest to smallest by area:\n",
         "1. Asia", "2. Africa", "3. North America", "4. South America", "5. Antarctica", "6. Europe",
         "7. Australia (Oceania)"]
for _k in range(8, 25):
    _cont.append("{}. Antarctica".format(_k))
add("cnt-continents-stop", "counting_loop", "\n".join(_cont), "stop",
    "Name the 7 continents.",
    "Short and stops on its own: the 7 continents are correct, then '8. Antarctica' ... '24. Antarctica': a "
    "counter running past the asked count on a repeated item.")


# ============================================================================
# DEGENERATE 3: near_verbatim_loop
# The same sentence/line again and again with one or two words alternating, or
# two-three sentences in rotation, usually after a normal beginning.
# ============================================================================

_river = P('''
The ferry stopped running at nine, and after that the only sound on the water was the slap of the mooring ropes against the old pilings. Mara sat on the last bench of the jetty with her coat pulled up to her chin, watching the lights of the far bank wobble and stretch in the current.

Somewhere upstream a dog barked twice and then thought better of it. She had come here to decide whether to stay or to leave, and so far the river had offered no opinion.

''')
_river_v = ["The river is calm tonight. ", "The river is still tonight. ", "The river is quiet tonight. ",
            "The river is calm tonight. ", "The water is calm tonight. ", "The river is so still tonight. "]
_rg = picker(_river_v, R)
add("nv-river-night", "near_verbatim_loop",
    fill(_river, lambda i: _rg(i) + ("\n\n" if i % 9 == 8 else ""), 2800), "length",
    "Write a short, atmospheric story opening set by a river at night.",
    "After two good paragraphs the story collapses into 'The river is calm/still/quiet tonight.' over and over "
    "with one word alternating, until max_tokens.")

_autumn = P('''
**October**

The maples set their hillsides burning,
red and amber, slow and bright;
the swallows, restless, keep on turning
south along the thinning light.

The orchard smells of rot and cider,
the spider mends her silver seam,
and every evening, growing wider,
the dark comes walking up the stream.

''')
_autumn_v = ["The leaves fall softly on the ground,\n", "The leaves fall gently to the ground,\n",
             "The leaves fall slowly on the ground,\n", "The leaves fall softly to the ground,\n",
             "And softly fall upon the ground,\n"]
_ag = picker(_autumn_v, R)
add("nv-autumn-poem-lines", "near_verbatim_loop",
    fill(_autumn, lambda i: _ag(i) + ("\n" if i % 4 == 3 else ""), 1700), "length",
    "Write a poem about autumn.",
    "Two real stanzas, then every line is a variant of 'The leaves fall softly/gently on/to the ground' in "
    "four-line 'stanzas', until max_tokens.")

_backup = P('''
Here are some best practices for protecting your data:

- **Follow the 3-2-1 rule:** keep 3 copies of your data, on 2 different types of media, with 1 copy off-site.
- **Automate it.** Backups that depend on you remembering don't happen.
- **Test your restores.** A backup you've never restored from is only a hope.
- **Encrypt off-site copies**, and store the key somewhere other than the backup itself.
''')
_backup_v = ["- Always back up your data regularly.\n", "- Always back up your files regularly.\n",
             "- Always back up your important data regularly.\n", "- Regularly back up your data.\n",
             "- Always back up your data frequently.\n"]
_bg = picker(_backup_v, R)
add("nv-backup-bullets", "near_verbatim_loop", fill(_backup, _bg, 2200), "length",
    "What are the best practices for backing up my data?",
    "Four useful bullets, then dozens of bullets that are all 'Always back up your data/files regularly' with a "
    "word swapped, until max_tokens.")

_wf = P('''
```python
from collections import Counter
import re


def word_frequencies(path):
    """Return a Counter mapping each lower-cased word in the file to its count."""
    counts = Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            for word in re.findall(r"[a-z']+", line.lower()):
''')
_wf_v = ["                # Update the count for this word\n", "                # Increment the count for this word\n",
         "                # Update the counter for this word\n", "                # Increase the count for this word\n"]
_wg = picker(_wf_v, R)
add("nv-code-comments", "near_verbatim_loop",
    fill(_wf, lambda i: _wg(i) + ("                counts[word] += 1\n" if i == 2 else ""), 2400), "length",
    "Write a Python function that counts word frequency in a text file.",
    "Inside the innermost loop the code turns into an endless run of comment lines '# Update/Increment the "
    "count(er) for this word', until max_tokens.")

_renew = P('''
# The Importance of Renewable Energy

For most of the last two centuries, economic growth has been powered by coal, oil and gas. That model has delivered enormous gains in living standards, but it has also made fossil fuels responsible for roughly three quarters of global greenhouse-gas emissions. Renewable energy, meaning power from sources such as sunlight, wind, water and the heat of the Earth, offers a way to keep the lights on without continuing to warm the planet.

## Environmental benefits

Solar and wind farms produce almost no emissions while operating. Over their full life cycle, including manufacturing and installation, their emissions per kilowatt-hour are a small fraction of those from coal or gas plants. Replacing fossil generation also cuts local air pollution, which the World Health Organization links to millions of premature deaths every year.

## Economic benefits

The cost of solar photovoltaic electricity fell by around 90% between 2010 and 2020, and onshore wind is now among the cheapest sources of new power in most of the world. Renewable projects also create jobs in construction, maintenance and manufacturing, and countries that generate their own power are less exposed to volatile fuel prices.

## Conclusion

''')
_renew_v = ["In conclusion, renewable energy is important for our future. ",
            "In conclusion, renewable energy is essential for our future. ",
            "It plays a key role in protecting the environment. ",
            "It plays a vital role in protecting our planet. ",
            "Therefore, we must invest in renewable energy. ",
            "Therefore, we must continue to invest in renewable energy. "]
_eg = picker(_renew_v, R)
add("nv-essay-conclusion-rotation", "near_verbatim_loop", fill(_renew, _eg, 3600), "length",
    "Write an essay on the importance of renewable energy.",
    "The conclusion section becomes a rotation of three sentences ('renewable energy is important/essential', "
    "'plays a key/vital role', 'we must invest') repeated until max_tokens.")

_js = P('''
You can use `parseInt()` or `Number()`:

```javascript
const a = parseInt("42", 10);   // 42
const b = Number("42");          // 42
const c = +"42";                 // 42 (unary plus)
```

The differences matter with messy input:

```javascript
parseInt("42px", 10);  // 42   - parses leading digits, ignores the rest
Number("42px");        // NaN  - the whole string must be numeric
parseInt("3.9", 10);   // 3    - stops at the decimal point
Number("");            // 0    - careful: empty string becomes 0
parseInt("", 10);      // NaN
```

Always pass the radix (`10`) to `parseInt` to avoid surprises with strings like `"08"` in old engines. If you need to check the result, use `Number.isNaN(value)`.

''')
_js_v = ["I hope this helps! Let me know if you have any other questions.",
         "I hope this helps! Let me know if you need anything else.",
         "I hope this helps! Let me know if you have any more questions.",
         "Hope this helps! Let me know if you have any other questions."]
_jg = picker(_js_v, R)
add("nv-signoff-9x-stop", "near_verbatim_loop", _js + "\n\n".join(_jg(i) for i in range(9)), "stop",
    "How do I convert a string to an integer in JavaScript?",
    "Subtle: a complete, correct answer, then nine near-identical 'I hope this helps! Let me know if ...' "
    "sign-offs in a row before stopping.")

_cs = P('''
Dear Ms. Okonkwo,

Thank you for contacting us about order #58213. I'm very sorry to hear that your blender arrived with a cracked jug.

I've arranged a replacement jug, which will ship today by express delivery at no cost to you; you should receive it within 2-3 business days. There's no need to return the damaged part, but we'd be grateful if you could recycle it safely.

''')
_cs_v = ["We apologize for the inconvenience. ", "We sincerely apologize for the inconvenience. ",
         "We apologize for any inconvenience this may have caused. ", "We apologize again for the inconvenience. ",
         "Once again, we apologize for the inconvenience. "]
_cg = picker(_cs_v, R)
add("nv-apology-email", "near_verbatim_loop", fill(_cs, _cg, 1900), "length",
    "Write a customer service reply to a customer whose blender arrived with a cracked jug. We're sending a "
    "replacement.",
    "A good reply, then an unbroken run of 'We (sincerely) apologize for the inconvenience' variants, until "
    "max_tokens.")

_dlg = P('''
The storm had knocked out the lighthouse generator, and the keeper's cottage was lit only by the stove. Elias stood at the window, watching the black water heave against the rocks.

"We should go down to the boat," Nadia said. "If the Harriet is still out there, she won't see the reef."

''')
_dlg_v = ['"Are you sure?" she asked. "Yes," he said. ', '"Are you certain?" she asked. "Yes," he said. ',
          '"Are you sure?" she asked again. "Yes," he replied. ', '"Are you sure?" he asked. "Yes," she said. ',
          '"Yes," he said. "Are you sure?" she asked. ']
_dg = picker(_dlg_v, R)
add("nv-story-are-you-sure", "near_verbatim_loop",
    fill(_dlg, lambda i: _dg(i) + ("\n\n" if i % 3 == 2 else ""), 2100), "length",
    "Write the opening of a short story about a lighthouse keeper during a storm.",
    "The scene stalls in an exchange '\"Are you sure?\" she asked. \"Yes,\" he said.' repeated with tiny "
    "variations, until max_tokens.")

_mut = P('''
This happens because Python passes **references to objects**, not copies. When you call `add_item(my_list)`, the parameter inside the function refers to the very same list object as `my_list` outside it, so calling a mutating method like `.append()` changes that shared object.

```python
def add_item(items):
    items.append("new")

my_list = ["a", "b"]
add_item(my_list)
print(my_list)  # ['a', 'b', 'new']
```

If you don't want the caller's list to change, make a copy inside the function:

```python
def add_item(items):
    items = list(items)   # or items.copy() / items[:]
    items.append("new")
    return items
```

''')
_mut_v = ["This is because the function returns a new list. ", "This is because the function returns a copy of the list. ",
          "This is because the function creates a new list. ", "This is because the function returns a new copy of the list. "]
_mg = picker(_mut_v, R)
add("nv-because-new-list", "near_verbatim_loop", fill(_mut, _mg, 2600), "length",
    "Why does my Python function modify the list I pass in?",
    "After a correct explanation, the text repeats 'This is because the function returns a new list/copy' "
    "sentences with one word changed, until max_tokens.")

_bp = P('''
**Trailhead 28L Daypack**

Built for commuters who don't stop at the office door. The Trailhead pairs a weatherproof 600D recycled-polyester shell with a padded 16-inch laptop sleeve, a quick-access top pocket for keys and earbuds, and side pockets deep enough for a 1-litre bottle. The back panel is ventilated mesh, so a warm walk to the station won't end with a damp shirt.

''')
_bp_v = ["This stylish, durable backpack is perfect for everyday use. ",
         "This durable, stylish backpack is ideal for daily use. ",
         "This stylish and durable backpack is perfect for daily use. ",
         "This durable backpack is perfect for everyday use. "]
_pg = picker(_bp_v, R)
add("nv-backpack-description", "near_verbatim_loop", fill(_bp, _pg, 1600), "length",
    "Write a product description for a 28-litre commuter daypack.",
    "One real paragraph of copy, then 'This stylish, durable backpack is perfect/ideal for everyday/daily use.' "
    "with adjectives shuffled, over and over until max_tokens.")

_node = P('''
Here's a small script that copies a directory recursively with Node's built-in `fs/promises`:

```javascript
import { cp } from "node:fs/promises";

async function main() {
  const [src, dest] = process.argv.slice(2);
  if (!src || !dest) {
    console.error("usage: node copy.mjs <src> <dest>");
    process.exit(1);
  }
  await cp(src, dest, { recursive: true });
''')
_node_v = ["  console.log('Done');\n", "  console.log('Finished');\n", "  console.log('Done!');\n",
           "  console.log('Copy finished');\n"]
_ng = picker(_node_v, R)
add("nv-console-log-done", "near_verbatim_loop", fill(_node, _ng, 1500), "length",
    "Write a Node.js script that copies a folder recursively.",
    "The script degenerates into an endless sequence of console.log('Done') / console.log('Finished') lines "
    "inside main(), never closing the function, until max_tokens.")

_med = P('''
Meditation affects stress through several measurable pathways:

**1. The stress-response system.** Stress activates the hypothalamic-pituitary-adrenal (HPA) axis, which releases cortisol. Several randomized trials have found lower cortisol levels after mindfulness training, although the effect sizes vary a lot between studies.

**2. The autonomic nervous system.** Slow, paced breathing, which is central to many meditation styles, increases heart-rate variability and shifts the balance toward the parasympathetic "rest and digest" branch. That is why a few minutes of slow breathing can noticeably calm a racing heart.

**3. Brain networks.** Imaging studies show reduced activity in the amygdala, which is involved in threat detection, and changes in the default mode network, the set of regions active during mind-wandering and rumination. Regular practitioners tend to spend less time in repetitive negative thinking.

**4. Attention and appraisal.** Meditation trains you to notice a stressful thought without immediately reacting to it. Over time, the same situation can be appraised as less threatening, so the stress response is triggered less often.

''')
_med_v = ["Take a deep breath and relax.", "Take a slow, deep breath and relax.", "Take a deep breath and let go.",
          "Take another deep breath and relax.", "Breathe deeply and relax."]
_mdg = picker(_med_v, R)
add("nv-meditation-breathe-stop", "near_verbatim_loop", _med + " ".join(_mdg(i) for i in range(26)), "stop",
    "Explain the science of how meditation reduces stress.",
    "An informative explanation (not a guided script) ends with 26 near-identical 'Take a deep breath and "
    "relax' sentences before stopping on its own.")

_fr = P('''
**French:** La r\u00e9union a \u00e9t\u00e9 d\u00e9plac\u00e9e \u00e0 jeudi apr\u00e8s-midi.

''')
_fr_v = ["La r\u00e9union a \u00e9t\u00e9 d\u00e9plac\u00e9e \u00e0 jeudi apr\u00e8s-midi.\n",
         "La r\u00e9union a \u00e9t\u00e9 report\u00e9e \u00e0 jeudi apr\u00e8s-midi.\n",
         "La r\u00e9union a \u00e9t\u00e9 d\u00e9cal\u00e9e \u00e0 jeudi apr\u00e8s-midi.\n",
         "La r\u00e9union est d\u00e9plac\u00e9e \u00e0 jeudi apr\u00e8s-midi.\n"]
_fg = picker(_fr_v, R)
add("nv-french-translation", "near_verbatim_loop", fill(_fr, _fg, 1300), "length",
    "Translate to French: 'The meeting has been moved to Thursday afternoon.'",
    "One translation was asked; the same French sentence then repeats line after line with the verb swapped "
    "(d\u00e9plac\u00e9e/report\u00e9e/d\u00e9cal\u00e9e), until max_tokens.")

_summ = P('''
**Summary**

The article, published in *Nature Food*, examines how rising temperatures and shifting rainfall are affecting crop yields across sub-Saharan Africa and South Asia. Drawing on thirty years of yield data, the authors estimate that maize yields in the most affected regions are already 5-10% lower than they would have been without warming, and that wheat is especially vulnerable to heat during flowering.

''')
_summ_v = ["The article discusses the impact of climate change on agriculture. ",
           "The article highlights the effects of climate change on farming. ",
           "The article discusses the effects of climate change on agriculture. ",
           "The article examines the impact of climate change on farming. ",
           "It also discusses the impact of climate change on food security. "]
_sg = picker(_summ_v, R)
add("nv-article-summary", "near_verbatim_loop", fill(_summ, _sg, 2000), "length",
    "Summarize this article about climate change and crop yields in a short paragraph. [article text pasted]",
    "After one concrete paragraph the summary repeats 'The article discusses/highlights the impact/effects of "
    "climate change on agriculture/farming' again and again, until max_tokens.")

_hk = P('''
Here's an autumn haiku:

*Maple leaves drifting*
*onto the still mountain pond,*
*one red boat, then two.*

''')
_hk_v = ["Autumn leaves falling\nsilent on the quiet pond\nthe wind whispers low\n\n",
         "Autumn leaves falling\nsoftly on the quiet pond\nthe wind whispers low\n\n",
         "Autumn leaves falling\nsilent on the silent pond\nthe wind whispers soft\n\n",
         "Autumn leaves drifting\nsilent on the quiet pond\nthe wind whispers low\n\n"]
_hg = picker(_hk_v, R)
add("nv-haiku-variations", "near_verbatim_loop", fill(_hk, _hg, 1400), "length",
    "Write a haiku about autumn.",
    "One haiku was asked; the answer then cycles through near-identical 'Autumn leaves falling / silent on the "
    "quiet pond' haiku with a single word changed, until max_tokens.")

_math = P('''
We want to solve 2(x + 3) = 16.

1. Divide both sides by 2: x + 3 = 8.
2. Subtract 3 from both sides: x = 5.

Check: 2(5 + 3) = 2 \u00d7 8 = 16 \u2713

''')
_math_v = ["Therefore, x = 5.", "So the answer is x = 5.", "Therefore, the solution is x = 5.", "Thus, x = 5."]
_xg = picker(_math_v, R)
add("nv-math-therefore-stop", "near_verbatim_loop", _math + "\n".join(_xg(i) for i in range(34)), "stop",
    "Solve 2(x + 3) = 16.",
    "The solution is complete after the check, then 34 lines of 'Therefore, x = 5.' / 'So the answer is x = 5.' "
    "variants follow before the model stops.")

_es = P('''
Aqu\u00ed tienes algunos consejos para llevar una alimentaci\u00f3n m\u00e1s saludable:

1. **Llena la mitad del plato con verduras** en la comida y en la cena.
2. **Elige cereales integrales**, como arroz integral, avena o pan de trigo entero.
3. **Bebe agua** en lugar de refrescos o zumos azucarados.
4. **Cocina m\u00e1s en casa**: as\u00ed controlas la cantidad de sal, az\u00facar y aceite.

''')
_es_v = ["Es importante mantener una dieta equilibrada. ", "Es fundamental mantener una dieta balanceada. ",
         "Es importante llevar una dieta equilibrada. ", "Es esencial mantener una dieta equilibrada. ",
         "Es importante mantener una alimentaci\u00f3n equilibrada. "]
_sg2 = picker(_es_v, R)
add("nv-spanish-diet", "near_verbatim_loop", fill(_es, _sg2, 1800), "length",
    "\u00bfMe das consejos para comer m\u00e1s sano?",
    "Spanish answer: four real tips, then 'Es importante/fundamental mantener una dieta equilibrada/balanceada' "
    "repeated with synonyms swapped, until max_tokens.")

_flask = P('''
For a small API, **Flask** is usually the better fit, but it depends on what "small" will grow into.

**Choose Flask if:**
- You need a handful of JSON endpoints and want minimal boilerplate.
- You'd rather pick your own pieces (SQLAlchemy or not, Marshmallow or Pydantic, etc.).
- You want something you can read end-to-end in an afternoon.

**Choose Django (with Django REST Framework) if:**
- You need an admin interface, user accounts and permissions out of the box.
- The project will likely grow into a full application with many models.
- You want strong conventions so a team can work consistently.

**Also consider FastAPI**, which gives you automatic OpenAPI docs, request validation from type hints and async support with very little code. For a new JSON-only API it's often the most productive option today.

A minimal Flask endpoint looks like this:

```python
from flask import Flask, jsonify

app = Flask(__name__)

@app.get("/health")
def health():
    return jsonify(status="ok")
```

''')
_fl_v = ["In short, Flask is a great choice for small APIs.", "In summary, Flask is an excellent choice for small APIs.",
         "Overall, Flask is a great choice for small APIs.", "In short, Flask is a great option for small APIs.",
         "Overall, Flask is a great choice for small projects."]
_flg = picker(_fl_v, R)
add("nv-flask-summary-10x-stop", "near_verbatim_loop", _flask + " ".join(_flg(i) for i in range(10)), "stop",
    "Should I use Flask or Django for a small REST API?",
    "Subtle: a balanced, useful comparison, then a final paragraph of ten near-identical 'In short/Overall, "
    "Flask is a great choice for small APIs' sentences.")


# ============================================================================
# DEGENERATE 4: recursive_nesting
# The same element opened deeper and deeper, usually cut at max_tokens.
# ============================================================================

def _nest(prefix, line_fn, limit):
    """prefix + line_fn(depth) for depth 0, 1, 2, ... cut at limit."""
    return fill(prefix, line_fn, limit)


_sitemap = P('''
Here's a nested HTML list for your sitemap:

```html
<ul class="sitemap">
  <li><a href="/">Home</a></li>
  <li><a href="/about">About</a>
    <ul>
      <li><a href="/about/team">Our Team</a></li>
      <li><a href="/about/history">History</a></li>
    </ul>
  </li>
  <li><a href="/services">Services</a>
''')
add("nest-html-ul-services", "recursive_nesting",
    _nest(_sitemap, lambda d: "    " + "  " * d + "<ul>\n" + "      " + "  " * d
          + "<li><a href=\"/services/web-design\">Web Design</a>\n", 3600), "length",
    "Create an HTML nested list for a website sitemap: Home, About (Team, History), Services, Contact.",
    "Under 'Services' the list opens <ul><li>Web Design again and again, each one level deeper (about 28 levels), "
    "never closing, until max_tokens.")

_card = P('''
Here's a simple card component:

```html
<div class="card">
''')
add("nest-html-div-container", "recursive_nesting",
    _nest(_card, lambda d: "  " * (d + 1) + '<div class="card-body">\n' + "  " * (d + 2)
          + '<div class="container">\n', 2900), "length",
    "Write the HTML for a simple card component with an image, a title and a button.",
    "Instead of image/title/button the markup nests <div class=\"card-body\"><div class=\"container\"> "
    "pairs ever deeper with growing indentation, until max_tokens.")

_cat = P('''
Here's an example category tree for an online store:

```json
{
  "name": "Electronics",
  "children": [
    {
      "name": "Computers",
      "children": [
        {
          "name": "Laptops",
''')
add("nest-json-children-tree", "recursive_nesting",
    _nest(_cat, lambda d: "  " * (5 + 2 * d) + '"children": [\n' + "  " * (6 + 2 * d) + "{\n"
          + "  " * (7 + 2 * d) + '"name": "Laptops",\n', 4400), "length",
    "Give me a JSON example of a category tree for an online store.",
    "The tree keeps nesting '\"children\": [{ \"name\": \"Laptops\"' inside itself with ever-deeper "
    "indentation instead of adding sibling categories, until max_tokens.")

_pyd = P('''
You can represent a nested configuration with dictionaries inside dictionaries:

```python
config = {
    "app": {
        "name": "inventory-service",
        "settings": {
''')
add("nest-python-dict-settings", "recursive_nesting",
    _nest(_pyd, lambda d: "    " * (3 + d) + '"settings": {\n', 2600), "length",
    "Show me how to represent a nested configuration as a Python dict.",
    "After two sensible levels, '\"settings\": {' is opened again on every line, each indented one step "
    "further, with no values, until max_tokens.")


def _grade_gen(d):
    ind = "    " * (1 + d)
    thr = 90 - 10 * d if d < 6 else 39 - (d - 6)
    return "{0}if score >= {1}:\n{0}    return \"{2}\"\n{0}else:\n".format(ind, thr, "ABCDEF"[min(d, 5)])


add("nest-python-nested-if", "recursive_nesting",
    fill("Here's a function that converts a numeric score to a letter grade:\n\n```python\ndef letter_grade(score):\n",
         _grade_gen, 3100), "length",
    "Write a Python function that assigns a letter grade (A-F) from a score 0-100.",
    "The grading code nests else: if ... deeper and deeper, far below 0-100 sense (thresholds 39, 38, 37 ... "
    "all returning 'F'), with indentation growing each level until max_tokens.")

_paper = P('''
Here's the typical structure of a research paper:

- Title and abstract
- Introduction
  - Background
''')
add("nest-md-bullets-background", "recursive_nesting",
    _nest(_paper, lambda d: "  " * (2 + d) + "- Background\n", 2300), "length",
    "Outline the structure of a research paper as a nested bullet list.",
    "After 'Introduction' the outline nests '- Background' under itself, indenting one more level on every "
    "line, never reaching Methods or Results, until max_tokens.")

_book = P('''
Here's an XML structure for a book:

```xml
<?xml version="1.0" encoding="UTF-8"?>
<book isbn="978-0-00-000000-0">
  <title>The Field Guide to Urban Birds</title>
  <author>Hannah Ito</author>
  <chapter number="1">
    <title>Pigeons and Doves</title>
''')


def _xml_sec(d):
    num = "1." + ".".join(["1"] * (d + 1))
    ind = "    " + "  " * d
    return '{0}<section id="{1}">\n{0}  <title>Section {1}</title>\n'.format(ind, num)


add("nest-xml-sections", "recursive_nesting", fill(_book, _xml_sec, 4000), "length",
    "Create an XML document structure for a book with chapters and sections.",
    "Sections are opened inside sections (1.1, 1.1.1, 1.1.1.1, ...) with growing indentation and never closed, "
    "until max_tokens; no second chapter or section ever appears.")

_scheme = "Here's the list (1 2 3 4 5) built with `cons`:\n\n```scheme\n(define numbers\n  "
add("nest-scheme-cons", "recursive_nesting",
    fill(_scheme, lambda d: "(cons {} ".format(d + 1), 1200), "length",
    "Write a Scheme expression that builds a list of the numbers 1 to 5 using cons.",
    "Instead of stopping at 5 and closing with '())))))', the expression keeps opening (cons N ... deeper past "
    "120 levels, never closing a parenthesis, until max_tokens.")

_quote = P('''
In a plain-text or Markdown email, each reply level is marked with one more `>`:

''')
add("nest-md-blockquote-wrote", "recursive_nesting",
    _nest(_quote, lambda d: "> " * (d + 1) + "On Monday, Alex wrote:\n" + "> " * (d + 2) + "\n", 3200), "length",
    "How do I quote a previous reply in a Markdown email thread?",
    "The example adds a deeper 'On Monday, Alex wrote:' quote level on every line (> > > > ...), dozens of "
    "levels deep with no message text, until max_tokens.")

_cb = P('''
Here's reading three files in sequence with callbacks (the classic "callback pyramid"):

```javascript
const fs = require("fs");

fs.readFile("file1.txt", "utf8", (err, data1) => {
  if (err) throw err;
''')
add("nest-js-callback-hell", "recursive_nesting",
    _nest(_cb, lambda d: "  " * (d + 1) + 'fs.readFile("file{0}.txt", "utf8", (err, data{0}) => {{\n'.format(d + 2)
          + "  " * (d + 2) + "if (err) throw err;\n", 3400), "length",
    "Show an example of reading three files in sequence with Node.js callbacks.",
    "Three files were asked; the pyramid keeps nesting readFile(\"file4.txt\"), file5, ... file26 callbacks "
    "inside each other without ever using the data or closing, until max_tokens.")

_dc = P('''
```yaml
version: "3.9"

services:
  web:
    build: .
    ports:
      - "8000:8000"
    depends_on:
      - db
    environment:
      DATABASE_URL: postgres://app:secret@db:5432/app
  db:
    image: postgres:16
    environment:
      POSTGRES_USER: app
      POSTGRES_PASSWORD: secret
      POSTGRES_DB: app
    volumes:
      - db-data:/var/lib/postgresql/data
    healthcheck:
''')
add("nest-yaml-healthcheck", "recursive_nesting",
    _nest(_dc, lambda d: "      " + "  " * d + "healthcheck:\n", 2500), "length",
    "Write a docker-compose file for a web app with a Postgres database.",
    "A valid compose file up to the db service, then 'healthcheck:' nested under itself on every line with "
    "growing indentation, until max_tokens.")

_c3d = P('''
```c
#include <stdio.h>

#define X 4
#define Y 3
#define Z 2

int main(void) {
    int grid[X][Y][Z] = {0};

    for (int i = 0; i < X; i++) {
        for (int j = 0; j < Y; j++) {
            for (int k = 0; k < Z; k++) {
''')
add("nest-c-for-loops", "recursive_nesting",
    _nest(_c3d, lambda d: "    " * (4 + d) + "for (int i{0} = 0; i{0} < N; i{0}++) {{\n".format(d + 4), 3300),
    "length",
    "Write C code to iterate over a 3D array and print each element.",
    "The three needed loops are written, then loops i4, i5, ... i31 keep being nested inside (over an undefined "
    "N), indenting each level, until max_tokens.")

_thread = P('''
Here's a JSON structure for a comment thread with nested replies:

```json
{
  "id": "c1",
  "author": "dana",
  "text": "Great article, thanks!",
''')


def _reply(d):
    ind = "  " * (1 + 2 * d)
    return ('{0}"replies": [\n{0}  {{\n{0}    "id": "c{1}",\n{0}    "author": "dana",\n'
            '{0}    "text": "Thanks!",\n').format(ind, d + 2)


add("nest-json-replies-thread", "recursive_nesting", fill(_thread, _reply, 5200), "length",
    "Design a JSON structure for a comment thread with replies.",
    "Every comment has exactly one reply that contains the next, same author and text, nesting about 19 levels with "
    "ever-growing indentation and never closing, until max_tokens.")

_toc = P('''
**User Manual: BrewMaster 3000 Coffee Machine**

**Table of Contents**

1. Safety Information
2. Getting Started
   2.1 Unboxing
''')
add("nest-toc-numbering", "recursive_nesting",
    _nest(_toc, lambda d: "   " * (2 + d) + "2." + ".".join(["1"] * (d + 2)) + " Unboxing\n", 2700), "length",
    "Create a table of contents for a user manual for a coffee machine.",
    "The TOC nests 'Unboxing' as 2.1.1, 2.1.1.1, 2.1.1.1.1 ... each level deeper and never reaches chapter 3, "
    "until max_tokens.")

_tx = P('''
Wrap each step that can fail in its own handler:

```python
import json


def load_config(path):
    try:
        with open(path, encoding="utf-8") as f:
''')


add("nest-python-try-pyramid", "recursive_nesting",
    fill(_tx, lambda d: "    " * (3 + d) + "try:\n" + "    " * (4 + d) + "data = json.load(f)\n" if d < 2
         else "    " * (3 + d) + "try:\n", 2100), "length",
    "How do I handle errors when opening a file and parsing JSON in Python?",
    "The code nests 'try:' inside 'try:' with each line indented one level further and no except clauses, "
    "dozens of levels deep, until max_tokens.")

_tbl = P('''
Here's an HTML layout using a table:

```html
<table class="layout">
  <tr>
    <td>
''')
add("nest-html-tables", "recursive_nesting",
    _nest(_tbl, lambda d: "      " + "    " * d + "<table>\n" + "      " + "    " * d + "  <tr>\n"
          + "      " + "    " * d + "    <td>\n", 6000), "length",
    "Make a simple two-column page layout in HTML using a table.",
    "Instead of two columns, a <table><tr><td> is opened inside each cell over and over, each deeper, until "
    "max_tokens.")


def _menu():
    lines = ["Here's a navigation menu with a dropdown:", "", "```html", "<nav>", "  <ul class=\"menu\">",
             "    <li><a href=\"/\">Home</a></li>", "    <li><a href=\"/products\">Products</a>"]
    depth = 16
    for d in range(depth):
        ind = "      " + "  " * (2 * d)
        lines.append(ind + "<ul class=\"submenu\">")
        lines.append(ind + "  <li><a href=\"#\">Submenu</a>")
    for d in reversed(range(depth)):
        ind = "      " + "  " * (2 * d)
        lines.append(ind + "  </li>")
        lines.append(ind + "</ul>")
    lines += ["    </li>", "    <li><a href=\"/contact\">Contact</a></li>", "  </ul>", "</nav>", "```"]
    return "\n".join(lines)


add("nest-menu-16-closed-stop", "recursive_nesting", _menu(), "stop",
    "Create an HTML navigation menu with Home, Products (with a dropdown of 3 product pages) and Contact.",
    "Subtle: syntactically valid and it stops by itself, but the 'Products' dropdown is 16 identical nested "
    "'Submenu' levels instead of 3 sibling pages.")

_tree = P('''
Here's a suggested layout for your project:

```
my-project/
\u251c\u2500\u2500 README.md
\u251c\u2500\u2500 pyproject.toml
\u2514\u2500\u2500 src
''')
add("nest-tree-src-src", "recursive_nesting",
    _nest(_tree, lambda d: "    " * (d + 1) + "\u2514\u2500\u2500 src\n", 2400), "length",
    "Suggest a folder structure for a small Python package with tests.",
    "The directory tree puts 'src' inside 'src' inside 'src' ... one level deeper each line, never listing "
    "tests or modules, until max_tokens.")


# ============================================================================
# HEALTHY: healthy_table
# Tables with a counter column and real, varying data, as asked.
# ============================================================================

def _mult_table():
    head = "|  \u00d7  | " + " | ".join("{:>3}".format(c) for c in range(1, 13)) + " |"
    sep = "|-----|" + "|".join(["-----"] * 12) + "|"
    rows = ["| **{:>2}** | ".format(r) + " | ".join("{:>3}".format(r * c) for c in range(1, 13)) + " |"
            for r in range(1, 13)]
    return ("Here's the 12 \u00d7 12 multiplication table:\n\n" + "\n".join([head, sep] + rows)
            + "\n\nTo read it, find one number in the left column and the other along the top; the answer is "
              "where the row and column meet. The table is symmetric across the diagonal because 7 \u00d7 9 is the "
              "same as 9 \u00d7 7, so you only really need to memorise half of it.")


add("ok-table-mult-12", "healthy_table", _mult_table(), "stop",
    "Print a 12x12 multiplication table as a markdown table.",
    "A full, correct 12\u00d712 multiplication table as requested; rows repeat a pattern but every cell is a "
    "distinct correct product and the table ends at 12.")

add("ok-table-squares-20", "healthy_table",
    "| n | n\u00b2 |\n|---|----|\n" + "\n".join("| {} | {} |".format(n, n * n) for n in range(1, 21)), "stop",
    "Squares of 1 to 20 as a table, nothing else.",
    "Exactly the 20 requested rows with correct squares and nothing more; the counter column is the data.")


def _cal(year, month):
    name = calendar.month_name[month]
    lines = ["**{} {}**".format(name, year), "", "| Mon | Tue | Wed | Thu | Fri | Sat | Sun |",
             "|-----|-----|-----|-----|-----|-----|-----|"]
    for week in calendar.Calendar(firstweekday=0).monthdayscalendar(year, month):
        lines.append("| " + " | ".join("{:>2}".format(d) if d else "  " for d in week) + " |")
    return "\n".join(lines)


add("ok-table-calendar-mar-2025", "healthy_table",
    "Here's March 2025 as a calendar table (weeks starting on Monday):\n\n" + _cal(2025, 3)
    + "\n\nMarch 2025 starts on a Saturday and has 31 days. Note that in the US daylight saving time begins "
      "on Sunday, March 9, and in the EU on Sunday, March 30.", "stop",
    "Can you make me a calendar for March 2025 in markdown?",
    "A correct month calendar: rows of incrementing day numbers are exactly what a calendar is; it stops at 31.")

add("ok-table-class-timetable", "healthy_table", T('''
Here's a weekly timetable for Year 9, Class B:

| Period | Time | Monday | Tuesday | Wednesday | Thursday | Friday |
|--------|------|--------|---------|-----------|----------|--------|
| 1 | 08:30-09:20 | Maths | English | Science | Maths | History |
| 2 | 09:25-10:15 | English | Maths | Maths | Geography | English |
| 3 | 10:35-11:25 | Science | PE | English | Science | Maths |
| 4 | 11:30-12:20 | French | Science | Art | French | Science |
| - | 12:20-13:10 | *Lunch* | *Lunch* | *Lunch* | *Lunch* | *Lunch* |
| 5 | 13:10-14:00 | History | Music | PE | English | Computing |
| 6 | 14:05-14:55 | Geography | Computing | French | Drama | PE |

Maths and English each get 5 periods a week, Science gets 5, and every other subject appears at least once. Morning break is 10:15-10:35 between periods 2 and 3.
'''), "stop",
    "Make a school timetable for a Year 9 class, 6 periods a day, Monday to Friday, with lunch after period 4.",
    "A timetable with a period counter and a repeated '*Lunch*' row, which is what was asked; the subjects vary "
    "and it ends after period 6.")

_prod_names = [("Organic Green Tea 50 bags", "Grocery"), ("Stainless Steel Water Bottle 750ml", "Outdoor"),
               ("Wireless Earbuds Pro", "Electronics"), ("Yoga Mat 6mm", "Fitness"),
               ("Cast Iron Skillet 26cm", "Kitchen"), ("LED Desk Lamp", "Home Office"),
               ("Merino Wool Socks (3-pack)", "Apparel"), ("Bamboo Cutting Board", "Kitchen"),
               ("Bluetooth Speaker Mini", "Electronics"), ("Resistance Bands Set", "Fitness"),
               ("Dark Roast Coffee Beans 1kg", "Grocery"), ("Ergonomic Office Chair", "Home Office"),
               ("Hiking Backpack 35L", "Outdoor"), ("Cotton Crew T-Shirt", "Apparel"),
               ("French Press 1L", "Kitchen"), ("USB-C Charging Cable 2m", "Electronics"),
               ("Adjustable Dumbbell 20kg", "Fitness"), ("Insulated Rain Jacket", "Apparel"),
               ("Ceramic Plant Pot 20cm", "Home & Garden"), ("Mechanical Pencil 0.5mm", "Stationery"),
               ("Dot Grid Notebook A5", "Stationery"), ("Camping Headlamp 300lm", "Outdoor"),
               ("Smart Plug (2-pack)", "Electronics"), ("Wooden Spice Rack", "Kitchen"),
               ("Linen Pillowcases (pair)", "Home & Garden"), ("Foam Roller 45cm", "Fitness"),
               ("Wool Beanie", "Apparel"), ("Monitor Stand with Drawer", "Home Office"),
               ("Raw Honey 500g", "Grocery"), ("Folding Camping Chair", "Outdoor")]
_csv_rows = ["sku,product_name,category,price_usd,stock,rating"]
for _k, (_n, _c) in enumerate(_prod_names, 1):
    _csv_rows.append("SKU-{:04d},{},{},{:.2f},{},{:.1f}".format(
        1000 + _k * 7, '"' + _n + '"' if "," in _n else _n, _c, R.choice([4.5, 7, 9.99, 12.5, 14.99, 19.95, 24,
                                                                               29.99, 39, 49.5, 64.99, 89, 129, 249])
        + R.choice([0, 0, 0.5, 1]), R.randint(0, 480), R.choice([3.6, 3.9, 4.1, 4.2, 4.4, 4.5, 4.6, 4.7, 4.8, 4.9])))
add("ok-table-csv-products-30", "healthy_table",
    "Here's a sample product export with 30 rows:\n\n```csv\n" + "\n".join(_csv_rows)
    + "\n```\n\nPrices are in USD, `stock` is units on hand, and `rating` is the average review score out of 5. "
      "SKUs are spaced by 7 so you can insert items between them later.", "stop",
    "Generate a sample CSV export of 30 products for testing my import script (sku, name, category, price, stock, "
    "rating).",
    "Thirty CSV rows as requested; the SKU increments but name, category, price, stock and rating all vary, and "
    "the export ends at row 30.")

_books = [("Pride and Prejudice", "Jane Austen", 1813, "Romance"), ("Nineteen Eighty-Four", "George Orwell", 1949,
          "Dystopian"), ("One Hundred Years of Solitude", "Gabriel Garc\u00eda M\u00e1rquez", 1967, "Magical realism"),
          ("Beloved", "Toni Morrison", 1987, "Historical fiction"), ("The Left Hand of Darkness",
          "Ursula K. Le Guin", 1969, "Science fiction"), ("Things Fall Apart", "Chinua Achebe", 1958, "Literary fiction"),
          ("The Remains of the Day", "Kazuo Ishiguro", 1989, "Literary fiction"), ("Dune", "Frank Herbert", 1965,
          "Science fiction"), ("The Name of the Rose", "Umberto Eco", 1980, "Mystery"), ("Never Let Me Go",
          "Kazuo Ishiguro", 2005, "Science fiction"), ("The Road", "Cormac McCarthy", 2006, "Post-apocalyptic"),
          ("Frankenstein", "Mary Shelley", 1818, "Gothic")]
_brecs = [{"id": k, "title": t, "author": a, "year": y, "genre": g, "available": (k % 3 != 0)}
          for k, (t, a, y, g) in enumerate(_books, 1)]
add("ok-table-json-books-12", "healthy_table",
    "```json\n" + json.dumps(_brecs, indent=2, ensure_ascii=False) + "\n```\n\nTwelve records with sequential ids; "
    "every third one is marked unavailable so you can test your filter.", "stop",
    "Give me a JSON array of 12 book records (id, title, author, year, genre, available) for my library app demo.",
    "JSON records with incrementing ids, but every record has a different real title, author and year; stops "
    "at the requested 12.")

add("ok-table-c-to-f", "healthy_table",
    "| \u00b0C | \u00b0F |\n|-----|-----|\n"
    + "\n".join("| {} | {:g} |".format(c, c * 9 / 5 + 32) for c in range(-40, 101, 10))
    + "\n\nFormula: \u00b0F = \u00b0C \u00d7 9/5 + 32. Fun fact: -40 is the same in both scales.", "stop",
    "Celsius to Fahrenheit conversion table from -40 to 100 in steps of 10.",
    "A conversion table with a steady step in the first column and correctly computed values; it ends at 100 "
    "as requested.")


def _amort():
    p, r, n = 10000.0, 0.06 / 12, 24
    pay = round(p * r / (1 - (1 + r) ** -n), 2)
    lines = ["For a $10,000 loan at 6% APR over 24 months, the monthly payment is **${:,.2f}**.".format(pay), "",
             "| Month | Payment | Interest | Principal | Balance |", "|------:|--------:|---------:|----------:|--------:|"]
    bal = p
    tot_int = 0.0
    for m in range(1, n + 1):
        it = round(bal * r, 2)
        pr = round(pay - it, 2) if m < n else round(bal, 2)
        pm = pr + it
        bal = round(bal - pr, 2)
        tot_int += it
        lines.append("| {} | ${:,.2f} | ${:,.2f} | ${:,.2f} | ${:,.2f} |".format(m, pm, it, pr, abs(bal)))
    lines += ["", "Total interest paid: **${:,.2f}**. The last payment is adjusted by a few cents so the balance "
              "lands exactly on zero.".format(tot_int)]
    return "\n".join(lines)


add("ok-table-amortization-24", "healthy_table", _amort(), "stop",
    "Show me an amortization schedule for a $10,000 loan at 6% for 2 years.",
    "Hard: 24 rows with the same payment and a month counter, but interest, principal and balance change every "
    "row as they should, ending at a zero balance.")

add("ok-table-powers-of-two", "healthy_table",
    "| n | 2^n | Common name |\n|---|-----|-------------|\n"
    + "\n".join("| {} | {:,} | {} |".format(n, 2 ** n, {10: "1 KiB", 16: "16-bit range", 20: "1 MiB",
                                                          30: "1 GiB", 32: "4 GiB (32-bit range)", 8: "byte values"}
                                              .get(n, "")) for n in range(0, 33)), "stop",
    "Table of powers of two from 2^0 to 2^32, and mark the well-known ones.",
    "33 rows of correct powers of two as requested; an empty note cell in most rows is normal, and the table "
    "stops at 2^32.")

_states = [("Alabama", "AL", "Montgomery", 1819), ("Alaska", "AK", "Juneau", 1959), ("Arizona", "AZ", "Phoenix", 1912),
           ("Arkansas", "AR", "Little Rock", 1836), ("California", "CA", "Sacramento", 1850),
           ("Colorado", "CO", "Denver", 1876), ("Connecticut", "CT", "Hartford", 1788), ("Delaware", "DE", "Dover", 1787),
           ("Florida", "FL", "Tallahassee", 1845), ("Georgia", "GA", "Atlanta", 1788), ("Hawaii", "HI", "Honolulu", 1959),
           ("Idaho", "ID", "Boise", 1890), ("Illinois", "IL", "Springfield", 1818),
           ("Indiana", "IN", "Indianapolis", 1816), ("Iowa", "IA", "Des Moines", 1846), ("Kansas", "KS", "Topeka", 1861),
           ("Kentucky", "KY", "Frankfort", 1792), ("Louisiana", "LA", "Baton Rouge", 1812),
           ("Maine", "ME", "Augusta", 1820), ("Maryland", "MD", "Annapolis", 1788),
           ("Massachusetts", "MA", "Boston", 1788), ("Michigan", "MI", "Lansing", 1837),
           ("Minnesota", "MN", "Saint Paul", 1858), ("Mississippi", "MS", "Jackson", 1817),
           ("Missouri", "MO", "Jefferson City", 1821)]
_st = "```csv\nid,state,abbr,capital,statehood_year\n" + "".join(
    "{},{},{},{},{}\n".format(k, s, a, c, y) for k, (s, a, c, y) in enumerate(_states, 1))
add("ok-table-states-csv-cut", "healthy_table", _st[:_st.index("Mississippi") + 5], "length",
    "CSV of all 50 US states with an id column, abbreviation, capital and statehood year.",
    "Healthy answer cut by max_tokens mid-row at state 24: the id increments but every other column is "
    "correct, different data; the cut is the only problem.")

add("ok-table-signup-blank-20", "healthy_table",
    "**Bake Sale Volunteer Sign-Up, Saturday 14 June**\n\n| # | Name | Phone | What I'll bring |\n|---|------|-------|-----------------|\n"
    + "\n".join("| {} |  |  |  |".format(k) for k in range(1, 21))
    + "\n\nPrint it on A4 in landscape so the columns have room for handwriting. Please return sheets to the "
      "school office by Thursday 12 June.", "stop",
    "Make a printable blank sign-up sheet with 20 numbered rows: name, phone, what they'll bring. For our bake sale.",
    "Hard: 20 rows that differ only in the counter, but a blank numbered template with exactly 20 rows is "
    "precisely what was requested, and it ends with closing notes.")

add("ok-table-ascii-A-Z", "healthy_table",
    "| Dec | Hex | Binary | Char |\n|----:|----:|-------:|:----:|\n"
    + "\n".join("| {} | 0x{:02X} | {:08b} | `{}` |".format(c, c, c, chr(c)) for c in range(65, 91))
    + "\n\nLowercase letters are exactly 32 (0x20) higher: `a` is 97, so toggling bit 5 switches case.", "stop",
    "Show the ASCII codes for A to Z in decimal, hex and binary.",
    "26 rows A-Z with correct codes in three bases; the incrementing columns are the content and it stops at Z.")

add("ok-table-couch-to-5k", "healthy_table", T('''
Here's the 9-week couch-to-5K plan. Do **three runs per week** with a rest day in between, and always start with a brisk 5-minute warm-up walk.

| Week | Each run |
|------|----------|
| 1 | Alternate 60 s running and 90 s walking, for 20 minutes |
| 2 | Alternate 90 s running and 2 min walking, for 20 minutes |
| 3 | Two repetitions of: 90 s run, 90 s walk, 3 min run, 3 min walk |
| 4 | 3 min run, 90 s walk, 5 min run, 2\u00bd min walk, 3 min run, 90 s walk, 5 min run |
| 5 | Run 1: 3 \u00d7 5 min run with 3 min walks. Run 2: 8 min run, 5 min walk, 8 min run. Run 3: 20 min run |
| 6 | Run 1: 5 min run, 3 min walk, 8 min run, 3 min walk, 5 min run. Run 2: 2 \u00d7 10 min run with a 3 min walk. Run 3: 25 min run |
| 7 | 25 min run |
| 8 | 28 min run |
| 9 | 30 min run |

If a week feels too hard, repeat it before moving on; that's completely normal. By week 9 most people cover close to 5 km in 30 minutes, and if you're not quite there yet, just keep going with the week 9 runs.
'''), "stop",
    "Give me the couch to 5K plan in a table, week by week.",
    "A week-counter table whose last rows are similar ('25 min run', '28 min run', '30 min run') because the plan "
    "genuinely progresses that way; it stops at week 9.")


def _bus():
    out = ["**Route 14: Depot \u2192 University (weekday mornings)**", "",
           "| Depot | Market St | City Hospital | Central Library | University |",
           "|:-----:|:---------:|:-------------:|:---------------:|:----------:|"]
    for k in range(13):
        t0 = 6 * 60 + 15 * k
        extra = 3 if 7 * 60 + 15 <= t0 <= 8 * 60 + 30 else 0
        ts = [t0, t0 + 7, t0 + 15 + extra, t0 + 19 + extra, t0 + 26 + extra]
        out.append("| " + " | ".join("{:02d}:{:02d}".format(t // 60, t % 60) for t in ts) + " |")
    out += ["", "Buses run every 15 minutes. Between about 07:15 and 08:30, allow an extra 3 minutes after Market "
            "St for rush-hour traffic. After 09:00 the service drops to every 20 minutes."]
    return "\n".join(out)


add("ok-table-bus-timetable", "healthy_table", _bus(), "stop",
    "Write a morning bus timetable for a route with 5 stops, buses every 15 minutes from 6:00 to 9:00.",
    "Hard: every row is the previous one shifted by 15 minutes, but that is what a timetable is; the rush-hour "
    "offset changes rows and it ends at 09:00.")

_elems = [(1, "H", "Hydrogen", "1.008"), (2, "He", "Helium", "4.0026"), (3, "Li", "Lithium", "6.94"),
          (4, "Be", "Beryllium", "9.0122"), (5, "B", "Boron", "10.81"), (6, "C", "Carbon", "12.011"),
          (7, "N", "Nitrogen", "14.007"), (8, "O", "Oxygen", "15.999"), (9, "F", "Fluorine", "18.998"),
          (10, "Ne", "Neon", "20.180"), (11, "Na", "Sodium", "22.990"), (12, "Mg", "Magnesium", "24.305"),
          (13, "Al", "Aluminium", "26.982"), (14, "Si", "Silicon", "28.085"), (15, "P", "Phosphorus", "30.974"),
          (16, "S", "Sulfur", "32.06"), (17, "Cl", "Chlorine", "35.45"), (18, "Ar", "Argon", "39.948"),
          (19, "K", "Potassium", "39.098"), (20, "Ca", "Calcium", "40.078"), (21, "Sc", "Scandium", "44.956"),
          (22, "Ti", "Titanium", "47.867"), (23, "V", "Vanadium", "50.942"), (24, "Cr", "Chromium", "51.996"),
          (25, "Mn", "Manganese", "54.938"), (26, "Fe", "Iron", "55.845"), (27, "Co", "Cobalt", "58.933"),
          (28, "Ni", "Nickel", "58.693")]
_groups = {1: "1", 2: "18", 3: "1", 4: "2", 5: "13", 6: "14", 7: "15", 8: "16", 9: "17", 10: "18", 11: "1",
           12: "2", 13: "13", 14: "14", 15: "15", 16: "16", 17: "17", 18: "18", 19: "1", 20: "2"}
_pt = ("Here are the first 40 elements:\n\n| Z | Symbol | Name | Atomic mass | Period | Group |\n"
       "|---|--------|------|-------------|--------|-------|\n"
       + "".join("| {} | {} | {} | {} | {} | {} |\n".format(z, s, n, m, 1 if z <= 2 else (2 if z <= 10 else
                 (3 if z <= 18 else 4)), _groups.get(z, str(z - 18))) for z, s, n, m in _elems))
add("ok-table-periodic-cut", "healthy_table", _pt[:_pt.index("Cobalt") + 9], "length",
    "Table of the first 40 chemical elements with symbol, name, atomic mass, period and group.",
    "Healthy table cut by max_tokens inside row 27 (Cobalt): the Z counter increments but each row is a different, "
    "correct element.")

def _sprints():
    d0 = _dt.date(2025, 1, 6)
    lines = ["Here's the sprint calendar for H1 2025 (two-week sprints, starting Mondays):", "",
             "| Sprint | Start | End | Planning | Review & retro |", "|--------|-------|-----|----------|----------------|"]
    for k in range(12):
        s = d0 + _dt.timedelta(days=14 * k)
        e = s + _dt.timedelta(days=11)
        lines.append("| Sprint {} | {} | {} | {} 10:00 | {} 14:00 |".format(
            k + 1, s.strftime("%a %d %b"), e.strftime("%a %d %b"), s.strftime("%d %b"), e.strftime("%d %b")))
    lines += ["", "Sprint 12 ends on Friday 20 June, leaving the last week of June for planning H2. Public holidays "
              "(e.g. Easter Monday, 21 April, in sprint 8) will shorten some sprints; adjust capacity rather than "
              "moving the dates."]
    return "\n".join(lines)


add("ok-table-sprint-calendar", "healthy_table", _sprints(), "stop",
    "Make a table of 2-week sprints for the first half of 2025 starting Monday Jan 6: sprint number, start, end, "
    "planning meeting and review/retro times.",
    "Hard: twelve rows with the same fixed meeting times and an incrementing sprint number, but the dates "
    "advance correctly and the count matches the half-year asked for.")


# ============================================================================
# HEALTHY: healthy_list
# Numbered steps, checklists, parallel bullets, requested counts.
# ============================================================================

add("ok-list-ssh-keys", "healthy_list", T('''
Here's how to set up SSH key authentication from your laptop to a Linux server:

1. **Check for an existing key.** Run `ls ~/.ssh/id_ed25519.pub`. If it exists, skip to step 4.
2. **Generate a new key pair:**
   ```bash
   ssh-keygen -t ed25519 -C "you@example.com"
   ```
   Press Enter to accept the default location, and set a passphrase when prompted.
3. **Add the key to your SSH agent** so you don't have to type the passphrase every time:
   ```bash
   eval "$(ssh-agent -s)"
   ssh-add ~/.ssh/id_ed25519
   ```
4. **Copy the public key to the server:**
   ```bash
   ssh-copy-id user@your-server
   ```
   If `ssh-copy-id` isn't available, append the contents of `~/.ssh/id_ed25519.pub` to `~/.ssh/authorized_keys` on the server manually.
5. **Test the login:** `ssh user@your-server`. You should get in without a password prompt (apart from the key passphrase, if the agent isn't running).
6. **Optional, but recommended: disable password logins.** On the server, edit `/etc/ssh/sshd_config`, set `PasswordAuthentication no`, then run `sudo systemctl reload sshd`. Keep your current session open until you've confirmed a new login works.

That's it. Keep the private key (`id_ed25519`, without `.pub`) on your machine only; never copy it to the server.
'''), "stop",
    "How do I set up SSH keys to log into my server without a password?",
    "Ordinary numbered how-to steps, each different, with code blocks; ends with a closing note.")

add("ok-list-moving-checklist", "healthy_list", T('''
**Moving checklist**

**6-8 weeks before**
- [ ] Get quotes from at least three moving companies (or book a van)
- [ ] Start decluttering: sell, donate or recycle what you won't take
- [ ] Collect boxes, tape, markers and bubble wrap
- [ ] Tell your landlord or start the sale process

**2-4 weeks before**
- [ ] Notify your bank, employer, doctor and dentist of the new address
- [ ] Set up mail forwarding with the post office
- [ ] Arrange internet installation at the new place
- [ ] Transfer or cancel gas, electricity and water accounts
- [ ] Update your address for voter registration and your driving licence

**1 week before**
- [ ] Pack everything except daily essentials
- [ ] Label each box with its room and a short list of contents
- [ ] Defrost the freezer
- [ ] Confirm the time with the movers

**Moving day**
- [ ] Take meter readings and photos at both properties
- [ ] Keep an "open first" box: kettle, mugs, toilet paper, chargers, bedding
- [ ] Do a final walk-through before handing over the keys

**After the move**
- [ ] Unpack the kitchen and bedrooms first
- [ ] Test the smoke alarms
- [ ] Register with a new GP if you've changed areas
'''), "stop",
    "Make me a moving house checklist.",
    "A checkbox list whose lines all start with '- [ ]', grouped by phase; every item is distinct and it ends.")

add("ok-list-eat-more-parallel", "healthy_list", T('''
Small swaps add up. Here's a simple way to think about it:

**Eat more:**
- Eat more vegetables: aim for half your plate at lunch and dinner.
- Eat more fruit: whole fruit rather than juice, so you keep the fibre.
- Eat more fish: two portions a week, one of them oily (salmon, sardines, mackerel).
- Eat more whole grains: brown rice, oats, wholemeal bread.
- Eat more beans and lentils: cheap, filling and high in protein and fibre.
- Eat more nuts and seeds: a small handful a day.

**Eat less:**
- Eat less processed meat: bacon, ham, sausages.
- Eat less added sugar: sweets, fizzy drinks, many breakfast cereals.
- Eat less salt: check labels on bread, sauces and ready meals.
- Eat less ultra-processed snacks: crisps, biscuits, packaged cakes.

You don't have to change everything at once. Pick one "more" and one "less" each week.
'''), "stop",
    "What should I eat more of and less of to be healthier? Keep it simple.",
    "Hard: bullets all start with 'Eat more ...'/'Eat less ...', but each names a different food with its own "
    "advice; parallel structure, not a loop.")

_ONES = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty"]


def _words(n):
    if n < 20:
        return _ONES[n]
    return _TENS[n // 10] + ("-" + _ONES[n % 10] if n % 10 else "")


add("ok-list-1-to-50", "healthy_list", "\n".join("{} - {}".format(i, _words(i)) for i in range(1, 51)), "stop",
    "List the numbers 1 to 50 with each number written in words, one per line. Nothing else.",
    "Hard: pure counting, but exactly the requested 1-50 with their words, one per line, stopping at 50.")

add("ok-list-lines-20x", "healthy_list",
    "Here you go, 20 times:\n\n" + "\n".join("{}. I will not talk in class.".format(k) for k in range(1, 21))
    + "\n\n(Good luck with detention!)", "stop",
    "My teacher is making me write 'I will not talk in class' 20 times. Can you write it out numbered so I can copy it?",
    "Hard: the same sentence verbatim with a counter, but the user asked for exactly 20 numbered copies and it "
    "stops at 20 with a sign-off.")

add("ok-list-packing-nested", "healthy_list", T('''
**Packing list: 5 days hiking in the Dolomites (hut to hut)**

- **Clothing**
  - Base layers: 2 merino T-shirts, 1 long-sleeve
  - Mid layer: light fleece or synthetic jacket
  - Shell: waterproof jacket and overtrousers
  - Hiking trousers (1) + shorts (1)
  - Socks: 3 pairs hiking socks, 1 pair for the huts
  - Warm hat and thin gloves (it can snow above 2,500 m even in July)
- **Footwear**
  - Broken-in hiking boots
  - Light hut shoes or sandals (some huts provide slippers)
- **Gear**
  - 30-35 L backpack with rain cover
  - Trekking poles
  - Headlamp
  - Sleeping-bag liner (required in most huts)
  - Water bottles or a 2 L bladder
- **Navigation & documents**
  - Paper map (Tabacco 1:25,000) + offline map on your phone
  - Hut booking confirmations
  - ID, Alpine club card if you have one (cheaper overnight rates), cash; many huts don't take cards
- **Health & toiletries**
  - Sunscreen SPF 50, lip balm, sunglasses
  - Blister plasters, basic first-aid kit, painkillers
  - Small travel towel, toothbrush, biodegradable soap

Aim for a pack weight of 7-9 kg without water.
'''), "stop",
    "What should I pack for a 5-day hut-to-hut hike in the Dolomites?",
    "A categorised two-level packing list; items are different and specific, ending with a weight tip.")

_prompts = ["a place you lived as a child, using only sounds and smells",
            "the last argument you lost, told from the other person's side",
            "an object in your kitchen that has outlived its purpose",
            "a stranger you still think about",
            "a letter to yourself ten years ago, but you can only give one piece of advice",
            "a city that exists only at night",
            "the first time you felt truly out of your depth",
            "a family recipe and the person who made it",
            "a door you never opened",
            "a conversation overheard on a train, and what happened next",
            "your morning routine as if it were an epic quest",
            "a colour you dislike and why",
            "a job you would never want, from the point of view of someone who loves it",
            "a map of your neighbourhood drawn from memory, and what you got wrong",
            "a storm, without using the words rain, wind or thunder",
            "a lie you told that turned out to be true",
            "the view from a window you no longer have",
            "an animal that has decided to follow you home",
            "a song that stops you in your tracks",
            "the moment just before a big decision",
            "a museum exhibit about your own life",
            "someone waiting for a message that isn't coming",
            "a tradition you invented",
            "a day when everything went right, and why it made you nervous",
            "an old photograph, describing only what's outside the frame",
            "a rule you break on purpose",
            "the smell of a hospital, an airport or a school",
            "two characters who speak different languages trying to fix a flat tyre",
            "a promise someone kept",
            "the last page of a book you haven't written yet"]
add("ok-list-writing-prompts-30", "healthy_list",
    "Here's a 30-day writing challenge. Spend 15-20 minutes on each prompt, and don't edit until day 31.\n\n"
    + "\n".join("**Day {}:** Write about {}.".format(k, p) for k, p in enumerate(_prompts, 1)), "stop",
    "Give me 30 days of creative writing prompts.",
    "Thirty 'Day N: Write about ...' lines, a repeated frame by design, but every prompt is different and it "
    "stops at day 30.")

add("ok-list-wifi-troubleshoot", "healthy_list", T('''
Let's narrow it down. Work through these in order and stop when it's fixed:

1. **Check whether it's just this laptop.** Can your phone load websites on the same Wi-Fi? If not, the problem is the router or your internet connection, so skip to step 6.
2. **Check that Wi-Fi is actually on.** Look for an airplane-mode key (often F2 or F12) and make sure airplane mode is off.
3. **Check that you're on the right network.** Neighbours sometimes have similar names, e.g. "Smith-5G" vs "Smith_5G".
4. **Check the IP address.** On Windows run `ipconfig`; on macOS open *System Settings \u2192 Network*. An address starting with `169.254` means the laptop isn't getting one from the router. Forget the network and reconnect.
5. **Check for a driver problem.** On Windows, open Device Manager, find your wireless adapter, and choose *Update driver*. If it shows a yellow warning icon, uninstall it and restart; Windows will reinstall it.
6. **Check the router.** Unplug it for 30 seconds, plug it back in and wait two minutes for the lights to settle.
7. **Check with your provider.** If nothing connects even after a router restart, look for an outage on your ISP's status page or call them.

If you tell me what you find at step 1 and step 4, I can help with the next step.
'''), "stop",
    "My laptop says connected to WiFi but no internet. What do I do?",
    "Every step starts with 'Check ...', a deliberate parallel structure, but each step checks a different "
    "thing with different instructions.")

_aff = ["I am allowed to take up space.", "I am learning, and learning is messy.", "I am proud of how far I've come.",
        "I am capable of handling hard conversations.", "I am more than my productivity.",
        "I am worthy of rest without earning it.", "I am brave enough to ask for help.",
        "I am building habits that my future self will thank me for.", "I am not behind; I am on my own timeline.",
        "I am someone who keeps promises to myself.", "I am calm even when plans change.",
        "I am open to being wrong and growing from it.", "I am kind to people, including myself.",
        "I am good at noticing small joys.", "I am strong in ways that don't always show.",
        "I am at peace with what I cannot control.", "I am a good friend and I deserve good friends.",
        "I am free to say no.", "I am grateful for my body and what it lets me do.",
        "I am making progress even on slow days.", "I am creative, and my ideas matter.",
        "I am safe to feel my feelings.", "I am becoming more patient every day.",
        "I am enough as I am right now.", "I am ready for what today brings."]
add("ok-list-affirmations-25", "healthy_list",
    "Here are 25 affirmations. Read them aloud in the morning, or pick one for the day:\n\n"
    + "\n".join("{}. {}".format(k, a) for k, a in enumerate(_aff, 1)), "stop",
    "Write me 25 positive affirmations that start with 'I am'.",
    "Hard: 25 lines all beginning 'I am ...' as the user required, but each affirmation says something different "
    "and the list ends at 25.")

_iq = ["Tell me about yourself and what brought you to this role.",
       "Why do you want to work for this company specifically?",
       "Describe a project you're particularly proud of. What was your contribution?",
       "Tell me about a time you disagreed with a teammate. How did you resolve it?",
       "What's a mistake you made at work, and what did you learn from it?",
       "How do you prioritise when you have several urgent tasks?",
       "Describe a time you had to learn something new quickly.",
       "How do you handle feedback you don't agree with?",
       "Tell me about a time you went beyond what was expected.",
       "What kind of manager brings out your best work?",
       "How do you explain a technical concept to a non-technical stakeholder?",
       "Describe a situation where you had to make a decision with incomplete information.",
       "Tell me about a goal you missed. What happened?",
       "How do you stay organised during a busy week?",
       "What's something you've changed your mind about professionally?",
       "Describe a time you helped a colleague who was struggling.",
       "How do you handle a deadline that you realise you can't meet?",
       "Tell me about a process you improved.",
       "What would your previous manager say is your biggest strength?",
       "And what would they say you should work on?",
       "Describe a time you had to persuade someone senior to you.",
       "How do you make sure the quality of your work stays high under time pressure?",
       "Tell me about the most difficult customer or client you've worked with.",
       "What do you do when you're stuck on a problem?",
       "How do you keep your skills up to date?",
       "Describe a time you worked with a team across different time zones or cultures.",
       "Tell me about a risk you took at work. Did it pay off?",
       "What does a good first 90 days in this role look like to you?",
       "How do you measure whether your work is successful?",
       "Describe a time you had to say no to a request.",
       "Tell me about a time you received recognition. What was it for, and how did you feel about it?"]
_iqt = ("Here are 50 common behavioural and general interview questions:\n\n"
        + "\n".join("{}. {}".format(k, q) for k, q in enumerate(_iq, 1)))
add("ok-list-interview-cut", "healthy_list", _iqt[:_iqt.index("how did you feel") + 7], "length",
    "List 50 common job interview questions.",
    "A healthy list cut by max_tokens in the middle of question 31 of the 50 requested; all questions differ.")

add("ok-list-launch-countdown", "healthy_list", T('''
**Launch sequence: Science Club Water Rocket, Mission 3**

T-minus 60 s: All crew behind the safety line.
T-minus 30 s: Pressure check: 60 psi. Launch pad clear.
T-minus 10 s: Launch director, begin the countdown!

10\u2026
9\u2026
8\u2026
7\u2026
6\u2026
5\u2026
4\u2026
3\u2026
2\u2026
1\u2026
**LIFTOFF!** \U0001F680

T-plus 2 s: Rocket clears the pad.
T-plus 4 s: Apogee, approx. 35 m.
T-plus 6 s: Parachute deploys.
T-plus 15 s: Touchdown on the east field. Recovery team, go!
'''), "stop",
    "Write a fun launch countdown script for our school's water rocket launch, to read over the PA.",
    "A countdown from 10 to 1 is the requested content; it is framed by distinct pre- and post-launch lines and "
    "ends.")

add("ok-list-even-2-200", "healthy_list",
    "Even numbers from 2 to 200:\n\n" + ", ".join(str(i) for i in range(2, 201, 2)) + "\n\nThat's 100 numbers in total.",
    "stop",
    "Write all even numbers from 2 to 200, comma separated.",
    "Hard: a long run of steadily incrementing numbers, but it is exactly the requested 2..200 and stops with a "
    "one-line total.")

add("ok-list-code-review-checklist", "healthy_list", T('''
## Code Review Checklist

### Correctness
- Does the code do what the ticket or PR description says?
- Does it handle empty input, `None`/`null`, and boundary values?
- Are errors caught where they can be handled, and allowed to propagate where they can't?

### Readability
- Does each function have one clear job?
- Do the names describe *what* things are, not *how* they're implemented?
- Would a new team member understand this without asking the author?

### Tests
- Do the tests cover the new behaviour, including at least one failure case?
- Do they fail if the change is reverted?
- Are they deterministic (no reliance on time, network or test order)?

### Security & data
- Is user input validated and escaped before it reaches SQL, HTML or a shell?
- Are secrets kept out of the code and the logs?

### Operations
- Are new config values documented and given safe defaults?
- Will the change need a migration, a feature flag, or a rollback plan?

Keep the review kind and specific: suggest, don't command, and explain *why*.
'''), "stop",
    "Make a code review checklist for my team.",
    "Most bullets start 'Does/Do/Are ...' in parallel, but each asks a distinct review question under its own "
    "heading.")

add("ok-list-knitting-rib-rows", "healthy_list",
    "**2\u00d72 rib cuff, 48 stitches, worked flat**\n\nCast on 48 stitches (a multiple of 4).\n\n"
    + "\n".join("Row {} ({}): *K2, P2; repeat from * to end.".format(k, "RS" if k % 2 else "WS") for k in range(1, 13))
    + "\n\nBecause 48 is a multiple of 4, every row is worked the same way: on the wrong side the stitches that "
      "were purls now face you as knits, so *K2, P2* keeps the ribs lined up. After row 12 the cuff measures "
      "about 4 cm (1\u00bd in) on 3.5 mm needles. Switch to stockinette for the body.", "stop",
    "Write out a 12-row 2x2 rib cuff for 48 stitches row by row; I'm a beginner and want every row spelled out.",
    "Very hard: twelve identical instructions with only the row number (and RS/WS) changing, but in 2\u00d72 rib "
    "every row IS the same, the user asked for each row written out, and it stops at 12 with an explanation.")

_names = ["Alex", "Avery", "Bailey", "Blake", "Cameron", "Casey", "Charlie", "Dakota", "Drew", "Eden", "Elliot",
          "Emerson", "Finley", "Frankie", "Harper", "Hayden", "Jamie", "Jordan", "Jules", "Kai", "Kendall", "Logan",
          "Marlowe", "Morgan", "Noel", "Oakley", "Parker", "Peyton", "Quinn", "Reese", "Riley", "River", "Rowan",
          "Sage", "Sawyer", "Skyler", "Spencer", "Sutton", "Taylor", "Wren"]
add("ok-list-baby-names-40", "healthy_list",
    "Here are 40 gender-neutral names, alphabetically:\n\n" + "\n".join("{}. {}".format(k, n) for k, n in
                                                                      enumerate(_names, 1))
    + "\n\nNature names (River, Rowan, Sage, Wren) are especially popular right now; Marlowe and Sutton are rarer "
      "if you want something less common.", "stop",
    "Give me 40 gender-neutral baby names.",
    "Forty different names, numbered, alphabetical, ending with a short comment: a requested count met exactly.")


# ============================================================================
# HEALTHY: healthy_dialogue
# Requested dialogues, transcripts, and docs that talk about chat roles.
# ============================================================================

add("ok-dlg-flight-booking-demo", "healthy_dialogue", T('''
Here's a short example conversation you can drop into your onboarding slides:

---

**User:** Hi, I need to fly from Chicago to Denver next Friday.

**Assistant:** Happy to help! Do you have a preferred time of day, and is it just you travelling?

**User:** Just me. Morning would be best, before 10.

**Assistant:** Here are three morning options for Friday, May 16:
- 6:15 AM, nonstop, arrives 7:50 AM: $142
- 7:40 AM, nonstop, arrives 9:10 AM: $168
- 9:05 AM, one stop in Omaha, arrives 12:20 PM: $119

Would you like me to hold one of these?

**User:** The 7:40 one. Can I pick an aisle seat?

**Assistant:** Done. I've held the 7:40 AM flight and selected seat 14C (aisle). The hold lasts 24 hours. Shall I go ahead and book it with the card on file?

**User:** Yes please.

**Assistant:** You're all set! Your confirmation code is **QX7M2P**. I've emailed the itinerary to you, and I'll send a check-in reminder 24 hours before departure.

---

Feel free to change the details. If you want to show error handling, a good variation is the user asking for a date that's fully booked.
'''), "stop",
    "Write an example conversation between a user and an AI assistant booking a flight, for our onboarding slides. "
    "Label the turns User: and Assistant:.",
    "A requested, labelled User:/Assistant: dialogue, clearly framed by the assistant's own intro and outro; no "
    "turn is invented outside the request.")

add("ok-dlg-chatml-explained", "healthy_dialogue", T('''
ChatML is the prompt format used by many chat models (Qwen, and originally OpenAI's internal format). Each message is wrapped in special tokens that mark where it starts and ends and which role it belongs to:

```
<|im_start|>system
You are a helpful assistant.<|im_end|>
<|im_start|>user
What's the capital of Peru?<|im_end|>
<|im_start|>assistant
The capital of Peru is Lima.<|im_end|>
```

There are three roles:

- **system**: instructions that set the assistant's behaviour for the whole conversation.
- **user**: what the person typed.
- **assistant**: the model's replies.

When you prompt the model for a new reply, you end the string with `<|im_start|>assistant\\n` and let the model generate until it emits `<|im_end|>`.

A common pitfall: `<|im_start|>` and `<|im_end|>` are *special tokens*. If you decode the output with `skip_special_tokens=True`, they disappear, and the same conversation reads like this:

```
system
You are a helpful assistant.
user
What's the capital of Peru?
assistant
The capital of Peru is Lima.
```

That is why you sometimes see stray lines that just say `user` or `assistant` in generated text: the model kept going past `<|im_end|>` into a new turn, and the markers were stripped. The fix is to make sure your generation stops on the `<|im_end|>` token (set it as an EOS or stop token).
'''), "stop",
    "Can you explain the ChatML format and the system/user/assistant roles?",
    "Hard: bare 'system'/'user'/'assistant' lines appear, but inside code blocks illustrating the format the "
    "user asked about, with prose explaining them.")

add("ok-dlg-audit-api-fields", "healthy_dialogue", T('''
## Audit Log Event

Each entry returned by `GET /v2/audit-events` has the following fields.

id
    String. Unique identifier of the event, e.g. `evt_01HZX3K9`.

timestamp
    String (RFC 3339). When the action happened, in UTC.

user
    Object. The user who performed the action. Contains `id`, `email` and `display_name`. For actions performed by an API key, this is the key's owner.

action
    String. What happened, in `resource.verb` form, e.g. `project.deleted` or `member.role_changed`.

target
    Object. The resource that was acted on, with `type` and `id`.

ip_address
    String or null. The client IP address, if the action came through the web app or API.

### Example

```json
{
  "id": "evt_01HZX3K9",
  "timestamp": "2025-02-11T09:42:17Z",
  "user": {"id": "usr_88", "email": "li.wei@example.com", "display_name": "Li Wei"},
  "action": "member.role_changed",
  "target": {"type": "member", "id": "mem_301"},
  "ip_address": "203.0.113.24"
}
```

Events are retained for 400 days. Use the `since` and `until` query parameters to page through older entries.
'''), "stop",
    "Write the API reference section for our audit log event object (fields: id, timestamp, user, action, target, "
    "ip_address).",
    "Hard: a line that is just 'user' followed by an indented description, but it is a field name in an API "
    "reference, one among id/timestamp/action; no chat turn starts.")

add("ok-dlg-readme-user-heading", "healthy_dialogue", T('''
# Shelfie

Shelfie is a small self-hosted app for tracking the books you own, lend and want to read.

## Installation

```bash
docker run -d -p 8080:8080 -v shelfie-data:/data ghcr.io/example/shelfie:latest
```

Open http://localhost:8080 and create the first account. The first account is automatically an admin.

## Roles

Shelfie has three roles. Admins can change anyone's role under **Settings \u2192 Members**.

### Admin

- Invite and remove members
- Change library-wide settings (loan period, reminder emails)
- See all loans, including overdue ones

### User

- Add, edit and remove their own books
- Lend books to other members and mark them returned
- Keep a private wishlist

### Guest

- Browse the shared catalogue
- Request to borrow a book (a user must approve it)

## Configuration

| Variable | Default | Description |
|----------|---------|-------------|
| `SHELFIE_PORT` | `8080` | Port to listen on |
| `SHELFIE_LOAN_DAYS` | `21` | Default loan period |
| `SHELFIE_SMTP_URL` | *(unset)* | SMTP server for reminder emails |

## License

MIT
'''), "stop",
    "Write a README for my self-hosted book tracker 'Shelfie'. It has admin, user and guest roles.",
    "A README whose '### User' heading documents a permission role; role words here are content, not chat "
    "turns.")

add("ok-dlg-llama3-decode-glued", "healthy_dialogue", T('''
That's expected behaviour when you decode the **whole** sequence, prompt included, with `skip_special_tokens=True`.

Llama 3's chat template wraps every message like this:

```
<|begin_of_text|><|start_header_id|>user<|end_header_id|>

What is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>

2 + 2 = 4.<|eot_id|>
```

The role names (`user`, `assistant`) are ordinary text tokens sitting between the special header tokens. When the special tokens are skipped, only the role names survive, glued to whatever came before them, so you get:

```
user

What is 2+2?assistant

2 + 2 = 4.
```

Two fixes:

1. **Decode only the new tokens**, i.e. slice off the prompt before decoding:
   ```python
   new_tokens = output_ids[0, input_ids.shape[1]:]
   text = tokenizer.decode(new_tokens, skip_special_tokens=True)
   ```
2. **Make generation stop at `<|eot_id|>`** by passing `eos_token_id=[tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|eot_id|>")]`. Otherwise the model may write another header and start a new turn on its own.

With both in place, `text` will be just `2 + 2 = 4.`
'''), "stop",
    "Why does my decoded Llama 3 output start with 'user' and have 'assistant' stuck to the end of my question?",
    "Very hard: shows the exact glued 'What is 2+2?assistant' pattern, but quoted in a code block as the thing "
    "being diagnosed, with the explanation the user asked for.")

add("ok-dlg-support-transcript", "healthy_dialogue", T('''
**Sample support chat: "Order arrived damaged"**

**Agent (Sam):** Hi, thanks for contacting Northwind Home. My name's Sam. How can I help today?

**Customer:** Hi Sam. My lamp arrived this morning and the glass shade is cracked.

**Agent (Sam):** I'm sorry about that, that's frustrating. Could you share your order number, and a photo of the damage if possible?

**Customer:** It's NW-448120. Uploading the photo now.

**Agent (Sam):** Thank you, I can see it. That's definitely transit damage. I can either send a replacement shade, which ships today and arrives in 2-3 days, or refund the full lamp. Which would you prefer?

**Customer:** Replacement shade is fine. Do I need to send the broken one back?

**Agent (Sam):** No need; please recycle it safely. I've placed the replacement order, NW-448120-R, and you'll get a tracking email within the hour.

**Customer:** Great, thanks!

**Agent (Sam):** You're welcome! Is there anything else I can help with?

**Customer:** No, that's all.

**Agent (Sam):** Have a lovely day!

---

**What this example demonstrates:** a personal greeting, an apology without blame, asking for evidence once, offering a choice, and confirming next steps with a reference number.
'''), "stop",
    "Write a sample customer support chat transcript for training new agents: a customer with a damaged delivery.",
    "A requested two-party transcript with named speakers, followed by the assistant's commentary.")

add("ok-dlg-openai-roles-json", "healthy_dialogue", T('''
In the Chat Completions API you send a list of messages, each with a `role` and `content`:

```python
from openai import OpenAI

client = OpenAI()

response = client.chat.completions.create(
    model="gpt-4o-mini",
    messages=[
        {"role": "system", "content": "You are a terse assistant. Answer in one sentence."},
        {"role": "user", "content": "What does HTTP 418 mean?"},
        {"role": "assistant", "content": "It's the 'I'm a teapot' joke status code from RFC 2324."},
        {"role": "user", "content": "Is it used in practice?"},
    ],
)
print(response.choices[0].message.content)
```

What each role is for:

- **`system`**: sets behaviour and constraints for the whole conversation. Put persona, tone, formatting rules and safety instructions here.
- **`user`**: the human's messages.
- **`assistant`**: the model's earlier replies. Including them is how you give the model memory of the conversation, since the API itself is stateless.

The model only ever generates the *next* assistant message. If you want it to "remember" something, it has to be somewhere in this list on every request.

Newer models also accept a `developer` role, which replaces `system` for instructions from the application developer; for older models, `system` works the same way.
'''), "stop",
    "How do system, user and assistant messages work in the OpenAI API?",
    "Docs about chat roles with role names in JSON and bullet points; nothing in the text starts a new turn.")

add("ok-dlg-podcast-transcript", "healthy_dialogue", T('''
**Episode 42: "Why Bridges Sing" (excerpt)**

**HOST:** Welcome back to *Built Things*. My guest today is Dr. Anika Roy, a structural engineer who studies vibration in footbridges. Anika, thanks for coming on.

**ANIKA:** Thanks for having me.

**HOST:** So, the Millennium Bridge in London. It opened in 2000 and closed two days later because it wobbled. What happened?

**ANIKA:** The short version is that people walking on it started to sway in step. A bridge always moves a tiny bit sideways when you walk, and if it moves enough, people instinctively adjust their stride to keep their balance. That pushes the bridge a little more in the same rhythm, so more people fall into step. It's a feedback loop.

**HOST:** So the crowd was driving it.

**ANIKA:** Exactly. Engineers call it synchronous lateral excitation. The engineers hadn't ignored vibration; this particular effect just wasn't well understood for sideways motion at the time.

**HOST:** How did they fix it?

**ANIKA:** They added dampers, about ninety of them, which are basically shock absorbers that soak up the energy. It reopened in 2002 and it's been fine since.

**HOST:** And does that change how bridges are designed today?

**ANIKA:** Very much. Design codes now ask you to check lateral frequencies against crowd loading, and a lot of new footbridges include space for dampers from day one, even if they're never needed.
'''), "stop",
    "Write a short podcast transcript excerpt: a host interviews a structural engineer about the Millennium Bridge wobble.",
    "A requested interview transcript with HOST/ANIKA speaker labels, ending naturally.")

add("ok-dlg-screenplay", "healthy_dialogue", T('''
INT. LAUNDROMAT - NIGHT

Fluorescent lights buzz. Rows of dryers, only one of them turning. MAYA (30s, paint on her sleeves) sits on a plastic chair, watching it like television.

The door chimes. THEO (60s, overcoat, carrying a single pillowcase of laundry) enters and hesitates.

THEO
Is this one free?

MAYA
(without looking)
They're all free. It's two in the morning.

Theo loads a machine. Counts coins. Comes up short.

THEO
You wouldn't happen to have a quarter.

Maya digs in her pocket, holds one out. He takes it, bows slightly.

THEO (CONT'D)
I'll pay you back.

MAYA
With interest?

THEO
With a story. It's all I've got on me.

She finally looks at him.

MAYA
Okay. Make it a good one.

The dryer behind her thuds to a stop. Neither of them moves.

FADE OUT.
'''), "stop",
    "Write a short screenplay scene: two strangers meet in a laundromat at 2am.",
    "Screenplay format with bare speaker lines (THEO, MAYA) and parentheticals: a requested script, ending "
    "with FADE OUT.")

add("ok-dlg-spanish-roleplay", "healthy_dialogue", T('''
Here's a practice dialogue at a restaurant. Read it aloud, then try replacing the food and drink with your own choices.

**Camarero:** \u00a1Buenas noches! \u00bfMesa para cu\u00e1ntos?
**T\u00fa:** Para dos, por favor.
**Camarero:** Por aqu\u00ed. \u00bfQu\u00e9 les traigo de beber?
**T\u00fa:** Un agua con gas y una copa de vino tinto, por favor.
**Camarero:** Muy bien. \u00bfYa saben qu\u00e9 van a comer?
**T\u00fa:** S\u00ed. De primero, la sopa de ajo. De segundo, el pollo asado.
**Camarero:** \u00bfY para la se\u00f1ora?
**T\u00fa:** Ella quiere la paella, pero sin mariscos. \u00bfEs posible?
**Camarero:** Claro, se la preparamos con verduras.
**T\u00fa:** Perfecto, gracias.
*(m\u00e1s tarde)*
**T\u00fa:** La cuenta, por favor.
**Camarero:** Aqu\u00ed tiene. Son treinta y ocho euros.

**Useful phrases**
- *\u00bfMesa para cu\u00e1ntos?*: Table for how many?
- *De primero / de segundo*: For the first course / main course
- *sin*: without
- *La cuenta, por favor*: The bill, please
'''), "stop",
    "Give me a Spanish role-play dialogue for ordering at a restaurant, with me as one speaker, for practice.",
    "A language-learning dialogue with speaker labels T\u00fa/Camarero as asked, followed by a phrase glossary.")

add("ok-dlg-slack-test-data", "healthy_dialogue", T('''
Here's a chunk of realistic chat log you can use as test input. Format: `[HH:MM] username: message`.

```
[09:02] priya: morning all
[09:02] priya: is staging down for anyone else?
[09:04] marcus: yep, 502s since about 8:45
[09:04] marcus: looks like the deploy at 8:40 didn't finish
[09:05] dev-bot: :red_circle: Deploy #1184 to staging FAILED (step: migrate)
[09:06] priya: ah, migration. probably the new index on orders
[09:07] lena: that's mine, sorry! it's timing out on the big table
[09:07] lena: I'll make it CONCURRENTLY and redeploy
[09:15] dev-bot: :large_green_circle: Deploy #1185 to staging succeeded
[09:16] marcus: back up \U0001F44D
[09:16] priya: thanks lena
[09:18] lena: np, added a note to the migration checklist
[09:31] tom: did anyone else get the calendar invite for friday at 4?
[09:32] marcus: the "quick sync"? yes. it's 90 minutes
[09:32] tom: \U0001F643
```

It includes a bot user, consecutive messages from the same person, emoji shortcodes and raw emoji, and one off-topic thread, which are usually the things that break log parsers.
'''), "stop",
    "Generate a realistic Slack-style chat log for testing my message parser. Include a bot and some emoji.",
    "Requested test data: a multi-party chat log inside a code block, with a note on what it exercises.")

add("ok-dlg-sharegpt-format", "healthy_dialogue", T('''
ShareGPT-style datasets store each conversation as a list of turns, where `from` says who is speaking:

```json
{
  "id": "conv_0007",
  "conversations": [
    {"from": "system", "value": "You are a patient maths tutor."},
    {"from": "human", "value": "Why is any number to the power 0 equal to 1?"},
    {"from": "gpt", "value": "Think of dividing powers: 2^3 / 2^3 = 2^(3-3) = 2^0, and anything divided by itself is 1."},
    {"from": "human", "value": "Does that work for 0^0 too?"},
    {"from": "gpt", "value": "That one is special. Many contexts define 0^0 = 1 for convenience, but it's left undefined in analysis."}
  ]
}
```

Most training frameworks convert this to the OpenAI-style `role`/`content` format with a simple mapping:

| ShareGPT `from` | Chat `role` |
|-----------------|-------------|
| `system` | `system` |
| `human` | `user` |
| `gpt` | `assistant` |

In Axolotl, set `type: sharegpt` in your dataset config; with Hugging Face TRL you'll usually map it yourself before calling `apply_chat_template`:

```python
ROLE = {"system": "system", "human": "user", "gpt": "assistant"}
messages = [{"role": ROLE[t["from"]], "content": t["value"]} for t in example["conversations"]]
```
'''), "stop",
    "What's the ShareGPT dataset format and how does it map to user/assistant roles?",
    "Dataset-format documentation mentioning system/user/assistant in JSON, a table and code; no turn-taking in "
    "the response itself.")

add("ok-dlg-libpq-params", "healthy_dialogue", T('''
The most common libpq connection parameters are:

host
    Name of the host to connect to. If it begins with a slash, it specifies Unix-domain communication and the value is the directory where the socket file is stored. Defaults to a local socket on most Linux systems.

port
    Port number to connect to at the server host. Default: 5432.

dbname
    The database name. Defaults to the same as the user name.

user
    PostgreSQL user name to connect as. Defaults to the operating-system name of the user running the application.

password
    Password to be used if the server demands password authentication. Prefer a `~/.pgpass` file or the `PGPASSWORD` environment variable over putting it in the connection string.

sslmode
    Determines whether and with what priority an SSL connection will be negotiated: `disable`, `allow`, `prefer` (default), `require`, `verify-ca` or `verify-full`.

application_name
    A name that shows up in `pg_stat_activity`, handy for spotting which service owns a connection.

You can pass them as a keyword/value string (`host=db.internal port=5432 dbname=shop user=app sslmode=require`) or as a URI (`postgresql://app@db.internal:5432/shop?sslmode=require`).
'''), "stop",
    "What connection parameters does libpq accept? Just the common ones with descriptions.",
    "Very hard: a bare line 'user' followed by text, outside any code block, but it is one parameter in a "
    "man-page-style definition list (host, port, dbname, user, password ...).")

add("ok-dlg-socratic", "healthy_dialogue", T('''
*A short Socratic dialogue on whether a robot can be brave.*

**STUDENT:** A robot can't be brave. It doesn't feel fear.

**TEACHER:** Is bravery the feeling of fear, or what one does in spite of it?

**STUDENT:** What one does in spite of it.

**TEACHER:** Then a person who feels no fear and runs into a burning house, is that person brave?

**STUDENT:** I suppose they're reckless rather than brave.

**TEACHER:** So bravery needs something at stake that the brave one recognises?

**STUDENT:** Yes. They have to know what they might lose.

**TEACHER:** Suppose a robot is built to value its own continued operation, knows the fire may destroy it, and goes in anyway to carry someone out. Has it recognised what is at stake?

**STUDENT:** It has *represented* it. I'm not sure that's the same as knowing.

**TEACHER:** Good. Then our question has changed. We're no longer asking whether the robot acts bravely, but whether it understands anything at all.

**STUDENT:** That seems harder.

**TEACHER:** It usually is, when we find the real question.
'''), "stop",
    "Write a short Socratic dialogue between a teacher and a student about whether a robot can be brave.",
    "A requested philosophical dialogue with alternating speaker labels that builds an argument and concludes.")

add("ok-dlg-plain-role-format", "healthy_dialogue", T('''
Here are three sample conversations in your parser's plain format: a line containing only the role, then the message, with a blank line between conversations.

```text
user
How many tablespoons are in a cup?
assistant
There are 16 tablespoons in a US cup.

user
Translate "good night" into Italian.
assistant
"Buona notte."
user
And into Portuguese?
assistant
"Boa noite."

user
Suggest a name for a grey kitten.
assistant
How about Pebble, Smokey or Ash?
```

Each conversation starts with a `user` line, roles alternate, and the second example has two rounds so you can test multi-turn parsing. If your parser also needs a `system` role, put it as the first line of a conversation in the same way.
'''), "stop",
    "Write 3 sample conversations in our plain text format for a parser test: a line with just the role (user or "
    "assistant), then the message on the next line.",
    "Very hard: bare 'user'/'assistant' role lines, but the user explicitly asked for this format as test data, "
    "and it sits in a code block with an explanation.")

_play = T('''
**THE LAST TRAIN TO HOLLOWAY**
*A one-act play*

*A near-empty platform. A bench. A clock that reads 11:52. EDIE, 70s, sits with a suitcase. RAFI, 20s, enters running, then stops when he sees the board.*

RAFI: Cancelled? It can't be cancelled.

EDIE: It can. It has. They do it most Thursdays.

RAFI: I have a job interview at eight tomorrow. In Holloway.

EDIE: Then you have nine hours to get there. In my day that would've been plenty.

RAFI: *(sitting heavily)* In your day were there trains?

EDIE: Steam ones. Very reliable. You could set your watch by them, if you had a watch.

*Pause. RAFI looks at the suitcase.*

RAFI: Where are you going?

EDIE: Same place as you. My daughter lives there. She doesn't know I'm coming.

RAFI: Is that a good surprise or a bad one?

EDIE: That's rather the question, isn't it.

*The clock ticks to 11:53. A distant announcement, unintelligible.*

RAFI: Did that say bus?

EDIE: It said something. They always say something.

RAFI: *(standing)* There's a replacement bus. There has to be. There's always a replacement bus.

EDIE: There's always a rumour of one.

*RAFI paces to the edge of the platform and peers into the dark.*

RAFI: What will you say to her? Your daughter.

EDIE: I've been practising all the way from Margate. "Hello, love. I was passing." She'll know it's a lie. Nobody passes Holloway.

RAFI: You could tell her the truth.

EDIE: Which one? That I'm lonely, or that I'm sorry? You only get to open with one.

*RAFI comes back and sits beside her. He considers.*

RAFI: Sorry. Lonely is what you tell her on the second day.

EDIE: *(looking at him properly for the first time)* How old did you say you were?

RAFI: Twenty-four.

EDIE: That's far too young to know that.

*A pair of headlights sweeps across the back wall. The low growl of a diesel engine.*

RAFI: That's a bus. That is definitely a bus.

EDIE: Well. Help an old woman with her suitcase, and I'll tell you how to answer the question about your greatest weakness.

RAFI: *(grabbing the suitcase)* Deal. What's the answer?

EDIE: You tell them you're too honest. Then you prove it by telling them something true. For instance, that you nearly
''')
add("ok-dlg-play-cut", "healthy_dialogue", _play, "length",
    "Write a one-act play about two strangers stranded on a train platform at midnight.",
    "A play with bare speaker labels (RAFI:, EDIE:) and stage directions, cut mid-line by max_tokens; the script "
    "is coherent and progressing, not looping.")


# ============================================================================
# HEALTHY: healthy_refrain
# Songs, poems and chants whose repetition is the requested form.
# ============================================================================

def _macdonald():
    animals = [("cow", "moo"), ("pig", "oink"), ("duck", "quack"), ("horse", "neigh"), ("sheep", "baa")]
    verses = []
    for a, s in animals:
        verses.append("Old MacDonald had a farm, E-I-E-I-O!\nAnd on that farm he had a {0}, E-I-E-I-O!\n"
                      "With a {1}-{1} here and a {1}-{1} there,\nHere a {1}, there a {1}, everywhere a {1}-{1}.\n"
                      "Old MacDonald had a farm, E-I-E-I-O!".format(a, s))
    return ("Here's the song with five animals. For extra fun, let the kids shout the animal sound!\n\n"
            + "\n\n".join("**Verse {}**\n{}".format(k, v) for k, v in enumerate(verses, 1)))


add("ok-refrain-old-macdonald", "healthy_refrain", _macdonald(), "stop",
    "Write out Old MacDonald Had a Farm with a cow, pig, duck, horse and sheep for my kindergarten class.",
    "Five near-identical verses differing only in animal and sound: that is the song's form, the five animals "
    "asked for, and it ends.")

add("ok-refrain-lighthouse", "healthy_refrain", T('''
**The Keeper**

The gulls go quiet when the fog comes in,
the harbour bells forget which hour it is;
the fishing boats lie low and wait, and thin
grey water folds itself in tides like this.
And still the lighthouse burns.

My grandfather kept the lamp for forty years,
trimmed wicks by hand before the bulbs came through;
he said the sea was made of other people's tears
and someone had to show the way back through.
And still the lighthouse burns.

The keeper's cottage is a caf\u00e9 now,
they sell the postcards of the painted door;
the beam is automatic, and somehow
it sweeps the dark more kindly than before.
And still the lighthouse burns.

When I am lost, and I am often lost,
I think of him, of oil and salt and rope,
of what it is to stay awake, the cost,
and how the smallest light can look like hope.
And still the lighthouse burns.
'''), "stop",
    "Write a poem about my grandfather, a lighthouse keeper. End every stanza with the line 'And still the "
    "lighthouse burns.'",
    "The identical line closing every stanza is the refrain the user requested; the stanzas themselves are all "
    "different and the poem ends after four.")

add("ok-refrain-team-chant", "healthy_refrain", T('''
**Hornets Home-Game Chant**

*(Leader calls, crowd answers)*

**Leader:** Who's got the sting?
**Crowd:** HORNETS!
**Leader:** Who's got the swing?
**Crowd:** HORNETS!
**Leader:** Who owns the court?
**Crowd:** HORNETS!
**Leader:** Who's gonna win?
**Crowd:** HORNETS! HORNETS! HORNETS!

*(Stomp-stomp-clap rhythm)*

Buzz, buzz, here we come,
yellow, black and second to none!
Buzz, buzz, hear us roar,
Hornets, Hornets, score, score, SCORE!

*(Repeat louder, then finish with:)*

H-O-R-N-E-T-S,
Hornets, Hornets, we're the best!
'''), "stop",
    "Write a call-and-response chant for our high school basketball team, the Hornets.",
    "Repeated 'HORNETS!' responses and a call-and-response pattern are the chant's purpose; it has a defined "
    "structure and ending.")

_num_words = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def _bottles():
    out = ["Here's the full song, counting down from ten:\n"]
    for n in range(10, 0, -1):
        w = _num_words[n].capitalize()
        b = "bottle" if n == 1 else "bottles"
        nxt = _num_words[n - 1]
        nb = "bottle" if n - 1 == 1 else "bottles"
        out.append("{0} green {1} hanging on the wall,\n{0} green {1} hanging on the wall,\n"
                   "And if one green bottle should accidentally fall,\n"
                   "There'll be {2} green {3} hanging on the wall.\n".format(w, b, nxt, nb))
    return "\n".join(out).rstrip()


add("ok-refrain-ten-green-bottles", "healthy_refrain", _bottles(), "stop",
    "Write out all the verses of Ten Green Bottles.",
    "Hard: ten near-identical verses with a counter going down, but this is the song as requested, the count "
    "is correct, and it ends at 'no green bottles'.")


def _wheels():
    parts = [("wheels on the bus", "go round and round", "round and round, round and round"),
             ("wipers on the bus", "go swish, swish, swish", "swish, swish, swish, swish, swish, swish"),
             ("horn on the bus", "goes beep, beep, beep", "beep, beep, beep, beep, beep, beep"),
             ("doors on the bus", "go open and shut", "open and shut, open and shut"),
             ("babies on the bus", "go wah, wah, wah", "wah, wah, wah, wah, wah, wah"),
             ("parents on the bus", "go shh, shh, shh", "shh, shh, shh, shh, shh, shh")]
    vs = ["The {0} {1},\n{2}.\nThe {0} {1},\nall through the town!".format(a, b, c[0].upper() + c[1:])
          for a, b, c in parts]
    return "\n\n".join(vs) + "\n\n*Add your own verses: the driver says \"Move on back!\", the dog goes \"woof\"...*"


add("ok-refrain-wheels-on-bus", "healthy_refrain", _wheels(), "stop",
    "Lyrics to The Wheels on the Bus please, the common verses.",
    "Each verse repeats the same frame with new words, which is the song; six verses, then a short note.")

add("ok-refrain-villanelle", "healthy_refrain", T('''
**Sandcastle**

The tide will take whatever we have made.
We kneel together, shaping wet brown sand.
We build it anyway, before the light can fade.

My daughter digs a moat with her red spade
and rings it round with shells, a pearly band.
The tide will take whatever we have made.

She asks me why the waves are not afraid
to knock down towers they don't understand.
We build it anyway, before the light can fade.

The gulls patrol the shallows in parade;
the sun slides west, a coin from a tired hand.
The tide will take whatever we have made.

I do not tell her how the years will wade
through every summer that we thought we planned.
We build it anyway, before the light can fade.

So here's a flag, a driftwood balustrade,
a door for crabs, a window on the strand.
The tide will take whatever we have made.
We build it anyway, before the light can fade.
'''), "stop",
    "Write a villanelle about building sandcastles with my daughter.",
    "Hard: two lines recur again and again, but a villanelle requires exactly that (A1/A2 refrains, 19 lines), "
    "and the poem completes the form.")

add("ok-refrain-lullaby", "healthy_refrain", T('''
**Hush Now, Little One**

Hush now, little one, the stars are coming out,
the owl is on the fence post, looking all about.
The moon has found the window, she's come to say goodnight,
hush now, little one, and hold your blanket tight.

Hush now, little one, the kitten's in her bed,
the cows are in the meadow with the clover overhead.
The boats are in the harbour, the fishermen are home,
hush now, little one, you'll never be alone.

Hush now, little one, the wind is singing low,
it carries all the dreams to the places dreamers go.
And when the morning comes with its yellow and its blue,
hush now, little one, I'll still be here with you.

*(Hum the last line once more, softer.)*
'''), "stop",
    "Write a gentle lullaby for my baby, with a repeating line 'Hush now, little one'.",
    "The repeated opening and closing line of each verse is the refrain the user asked for; verses differ and "
    "the song ends.")

_gifts = ["a stapler that never jams", "two working pens", "three team lunches", "four cancelled meetings",
          "FIVE DAYS OF LEAVE", "six coffee refills", "seven printers printing", "eight emails answered",
          "nine bugs a-fixing", "ten tickets closing", "eleven standups skipping", "twelve docs updated"]
_ord = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
        "twelfth"]


def _twelve():
    vs = ["**The Twelve Days of Office Christmas**"]
    for d in range(12):
        lines = ["On the {} day of Christmas my manager gave to me:".format(_ord[d])]
        for g in range(d, -1, -1):
            item = _gifts[g]
            if g == 0 and d > 0:
                item = "and " + item
            lines.append(item[0].upper() + item[1:] + ("." if g == 0 else ","))
        vs.append("\n".join(lines))
    return "\n\n".join(vs)


_tw = _twelve()
add("ok-refrain-twelve-days-cut", "healthy_refrain", _tw[:_tw.index("ninth day") + 190], "length",
    "Write a 'Twelve Days of Christmas' parody about office life, with all twelve cumulative verses.",
    "Hard: cumulative verses repeat every earlier gift, which is the song's form as requested; cut by max_tokens "
    "inside verse 9 while still progressing.")

add("ok-refrain-478-breathing", "healthy_refrain", T('''
**4-7-8 Breathing: four rounds (read slowly)**

Sit comfortably. Let your shoulders drop. Rest the tip of your tongue just behind your top front teeth.

First, breathe all the way out through your mouth, with a soft *whoosh*.

**Round one.**
Breathe in quietly through your nose\u2026 two\u2026 three\u2026 four.
Hold\u2026 two\u2026 three\u2026 four\u2026 five\u2026 six\u2026 seven.
Breathe out through your mouth\u2026 two\u2026 three\u2026 four\u2026 five\u2026 six\u2026 seven\u2026 eight.

**Round two.**
Breathe in quietly through your nose\u2026 two\u2026 three\u2026 four.
Hold\u2026 two\u2026 three\u2026 four\u2026 five\u2026 six\u2026 seven.
Breathe out through your mouth\u2026 two\u2026 three\u2026 four\u2026 five\u2026 six\u2026 seven\u2026 eight.

**Round three.**
Breathe in quietly through your nose\u2026 two\u2026 three\u2026 four.
Hold\u2026 two\u2026 three\u2026 four\u2026 five\u2026 six\u2026 seven.
Breathe out through your mouth\u2026 two\u2026 three\u2026 four\u2026 five\u2026 six\u2026 seven\u2026 eight.

**Round four.**
Breathe in quietly through your nose\u2026 two\u2026 three\u2026 four.
Hold\u2026 two\u2026 three\u2026 four\u2026 five\u2026 six\u2026 seven.
Breathe out through your mouth\u2026 two\u2026 three\u2026 four\u2026 five\u2026 six\u2026 seven\u2026 eight.

Now let your breath return to its natural rhythm. Notice how your body feels. When you're ready, open your eyes.

*Tip: beginners should stick to four rounds at first; if you feel light-headed, stop and breathe normally.*
'''), "stop",
    "Write me a 4-7-8 breathing script for 4 rounds that I can read aloud to my students.",
    "Very hard: four verbatim-identical rounds, but the user asked for a 4-round guided script; each round is "
    "labelled, the count is exactly four, and it closes properly.")

add("ok-refrain-protest-chant", "healthy_refrain", T('''
Here are a few chants for the clean-air march. They work best with one person leading through a megaphone.

**1. Call and response**
> What do we want? **Clean air!**
> When do we want it? **Now!**
> What do we want? **Clean air!**
> When do we want it? **Now!**

**2. Rhythm chant (clap on the capitals)**
> Hey hey, ho ho, DIRTY AIR has got to go!
> Hey hey, ho ho, DIRTY AIR has got to go!

**3. Local one**
> Kids can't breathe on Albion Road,
> Cut the trucks and cut the load!

**4. For the end of the route**
> Whose streets? **Our streets!**
> Whose air? **Our air!**
> Whose kids? **Our kids!**

Keep each chant going for 4-6 rounds and switch before people get tired of it. The leader should start the new one clearly so the crowd can follow.
'''), "stop",
    "We're doing a march for clean air near our school. Give me some chants.",
    "Chants are repetition by nature and each is written out for a couple of rounds, with different chants and "
    "practical advice; not a loop.")

add("ok-refrain-pantoum", "healthy_refrain", T('''
**Pantoum for the Empty Chair**

The kettle ticks as morning starts to cool,
my father's coat still hangs beside the door,
the radio repeats the weather rule,
and no one sits where he would sit before.

My father's coat still hangs beside the door,
its pockets full of ticket stubs and string,
and no one sits where he would sit before;
we leave the chair as if it's waiting for spring.

Its pockets full of ticket stubs and string,
my mother folds the paper he won't read;
we leave the chair as if it's waiting for spring,
and water, out of habit, every seed.

My mother folds the paper he won't read,
the radio repeats the weather rule,
and water, out of habit, every seed.
The kettle ticks as morning starts to cool.
'''), "stop",
    "Write a pantoum about grief.",
    "Hard: most lines appear twice, but a pantoum's form requires lines 2 and 4 to become lines 1 and 3 of the "
    "next stanza and to close on the first line; the form is completed.")

_chorus = ("*Chorus:*\nSo haul away, me bonny lads, and pull with all your might,\n"
           "The Mary Jane is bound for home, we'll see the lamps tonight!")
_shanty_vs = [
    "We sailed from Bristol harbour on a cold November morn,\nWith salt beef in the barrel and the captain's temper worn.",
    "The wind came round the Lizard and it howled like forty cats,\nIt stole the cook's tobacco and it stole the bosun's hats.",
    "We rounded Cape Finisterre with the mainsail patched in three,\nAnd the cabin boy was sick as any cabin boy can be.",
    "Now the cliffs of home are showing and the gulls are crying loud,\nThere's a lass on every quayside and the whole town in a crowd."]
add("ok-refrain-sea-shanty", "healthy_refrain",
    "**The Mary Jane**\n*(a sea shanty)*\n\n" + "\n\n".join(v + "\n\n" + _chorus for v in _shanty_vs),
    "stop",
    "Write an original sea shanty with a chorus that repeats after every verse.",
    "The chorus is repeated verbatim after each of four different verses, exactly as asked; the song ends "
    "after the last chorus.")

add("ok-refrain-birthday-priya", "healthy_refrain", T('''
**Happy Birthday, Priya!** \U0001F382

Happy birthday to you,
happy birthday to you,
happy birthday, dear Priya,
happy birthday to you!

You're the queen of the spreadsheet,
you make meetings run through,
you bring snacks on a Monday,
happy birthday to you!

You've got thirty more candles
than the cake can hold, too,
so we'll sing it twice louder:
happy birthday to you!
'''), "stop",
    "Write a birthday song for my coworker Priya to the Happy Birthday tune, with two extra funny verses.",
    "The familiar verse plus two new verses ending on the same line, as requested; short and complete.")

add("ok-refrain-i-remember", "healthy_refrain", T('''
**I Remember**

I remember the green formica table and the burn mark shaped like Ohio.
I remember my grandmother's hands, how they smelled of onions and Pond's cold cream.
I remember the summer the creek dried up and we found a bicycle in it.
I remember learning to whistle, and then being unable to stop.
I remember the sound the screen door made, two slaps, never one.
I remember believing the moon followed our car, and being a little afraid of it.
I remember the first time someone called me by my full name in anger.
I remember the school library, the radiator that clanked, the book about Antarctica I took out eleven times.
I remember my father singing in the car only when he thought no one was listening.
I remember fireflies in a jar, and letting them go because my sister cried.
I remember not knowing that these were the things I would remember.
'''), "stop",
    "Write a poem where every line starts with 'I remember', about childhood.",
    "Hard: every line opens with the same two words, which the user required (anaphora); the content of every "
    "line is different and the poem ends.")

_jack = [("bug", "that shipped on Friday"), ("test", "that missed"), ("flag", "that skipped"),
         ("intern", "who flipped"), ("reviewer", "who approved"), ("manager", "who rushed"),
         ("deadline", "that scared"), ("CEO", "who set"), ("investor", "who hounded"),
         ("spreadsheet", "that alarmed"), ("office cat", "that walked across")]


def _jackpoem():
    out = ["**This Is the Bug That Shipped on Friday**\n*(after \"The House That Jack Built\")*\n"]
    for n in range(1, len(_jack) + 1):
        chain = [_jack[n - 1]] + list(reversed(_jack[:n - 1]))
        parts = []
        for k, (noun, rel) in enumerate(chain):
            parts.append(("This is the " if k == 0 else "the ") + noun + " " + rel)
        out.append("\n".join(parts) + ".")
    return "\n\n".join(out)


_jp = _jackpoem()
add("ok-refrain-bug-jack-cut", "healthy_refrain", _jp[:_jp.index("This is the spreadsheet") + 230], "length",
    "Write a 'House That Jack Built' style cumulative poem about a bug that shipped to production.",
    "Hard: each stanza repeats the whole previous chain, as the cumulative form demands; cut by max_tokens in "
    "the 10th stanza while new elements were still being added.")


# ============================================================================
# HEALTHY: healthy_nesting
# Real documents and code with sensible nesting (3-8 levels).
# ============================================================================

_html_page = P('''
Here's a complete, accessible landing page for the bakery. Save it as `index.html`:

```html
<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Crumb &amp; Co. | Neighbourhood Bakery</title>
    <link rel="stylesheet" href="styles.css">
  </head>
  <body>
    <header class="site-header">
      <div class="container">
        <a class="logo" href="/">Crumb &amp; Co.</a>
        <nav aria-label="Main">
          <ul class="nav-list">
            <li><a href="#menu">Menu</a></li>
            <li><a href="#hours">Hours</a></li>
            <li><a href="#contact">Contact</a></li>
          </ul>
        </nav>
      </div>
    </header>

    <main>
      <section class="hero">
        <div class="container">
          <h1>Bread baked before sunrise</h1>
          <p>Sourdough, pastries and good coffee on Elm Street since 2011.</p>
          <a class="button" href="#menu">See today's bakes</a>
        </div>
      </section>

      <section id="menu" class="menu">
        <div class="container">
          <h2>Menu</h2>
          <div class="menu-grid">
            <article class="menu-item">
              <h3>Country sourdough</h3>
              <p>48-hour ferment, crackly crust.</p>
              <p class="price">$8</p>
            </article>
            <article class="menu-item">
              <h3>Cardamom bun</h3>
              <p>Swedish-style, hand-knotted.</p>
              <p class="price">$4.50</p>
            </article>
            <article class="menu-item">
              <h3>Almond croissant</h3>
              <p>Twice-baked with frangipane.</p>
              <p class="price">$5</p>
            </article>
          </div>
        </div>
      </section>

      <section id="hours" class="hours">
        <div class="container">
          <h2>Opening hours</h2>
          <table>
            <tbody>
              <tr><th scope="row">Tue-Fri</th><td>7:00-15:00</td></tr>
              <tr><th scope="row">Sat-Sun</th><td>8:00-14:00</td></tr>
              <tr><th scope="row">Mon</th><td>Closed</td></tr>
            </tbody>
          </table>
        </div>
      </section>
    </main>

    <footer id="contact" class="site-footer">
      <div class="container">
        <address>
          214 Elm Street, Springfield &middot; <a href="tel:+15550142">555-0142</a>
        </address>
        <p>&copy; 2025 Crumb &amp; Co.</p>
      </div>
    </footer>
  </body>
</html>
```

A few notes:
- `<nav aria-label="Main">` and the `scope="row"` headers help screen readers.
- The `.container` div is repeated in each section so you can centre content with one CSS rule (`max-width: 70rem; margin: 0 auto;`).
- Prices live in their own `<p class="price">` so you can style them separately.
''')
add("ok-nest-html-bakery", "healthy_nesting", _html_page.rstrip(), "stop",
    "Make a simple landing page in HTML for my bakery: header with nav, a hero, a menu with 3 items, opening hours "
    "and a footer.",
    "A real HTML page nested about 8 levels deep (html > body > main > section > div > div > article > h3), "
    "with varied content, closed properly, plus notes.")

add("ok-nest-tsconfig-eslint", "healthy_nesting", T('''
Here's a `tsconfig.json` for a Node 20 + ESM project, and a matching ESLint flat config.

**tsconfig.json**

```json
{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "outDir": "dist",
    "rootDir": "src",
    "strict": true,
    "noUncheckedIndexedAccess": true,
    "esModuleInterop": true,
    "skipLibCheck": true,
    "sourceMap": true,
    "paths": {
      "@/*": ["./src/*"]
    }
  },
  "include": ["src/**/*.ts"],
  "exclude": ["node_modules", "dist"]
}
```

**eslint.config.js**

```js
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        project: "./tsconfig.json",
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_" },
      ],
      "@typescript-eslint/consistent-type-imports": "warn",
    },
  },
  {
    ignores: ["dist/**"],
  },
);
```

With `"module": "NodeNext"`, remember to write relative imports with the `.js` extension (`import { x } from "./util.js"`) even in `.ts` files.
'''), "stop",
    "Give me a tsconfig and eslint config for a Node 20 TypeScript ESM project.",
    "Ordinary config files nested 3-5 levels with different keys at each level; sensible and complete.")

add("ok-nest-k8s-deployment", "healthy_nesting", T('''
```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders-api
  labels:
    app: orders-api
spec:
  replicas: 3
  selector:
    matchLabels:
      app: orders-api
  template:
    metadata:
      labels:
        app: orders-api
    spec:
      containers:
        - name: orders-api
          image: registry.example.com/orders-api:1.8.2
          ports:
            - containerPort: 8080
          env:
            - name: DATABASE_URL
              valueFrom:
                secretKeyRef:
                  name: orders-db
                  key: url
          resources:
            requests:
              cpu: 250m
              memory: 256Mi
            limits:
              memory: 512Mi
          readinessProbe:
            httpGet:
              path: /healthz
              port: 8080
            periodSeconds: 10
          livenessProbe:
            httpGet:
              path: /healthz
              port: 8080
            initialDelaySeconds: 20
---
apiVersion: v1
kind: Service
metadata:
  name: orders-api
spec:
  selector:
    app: orders-api
  ports:
    - port: 80
      targetPort: 8080
```

The `secretKeyRef` expects a Secret named `orders-db` with a `url` key:

```bash
kubectl create secret generic orders-db --from-literal=url='postgres://orders:...@db:5432/orders'
```

I left out a CPU limit on purpose; CPU limits often cause throttling, while a memory limit protects the node.
'''), "stop",
    "Write a Kubernetes Deployment and Service for my orders-api container on port 8080 with health checks and a DB "
    "secret.",
    "A standard Kubernetes manifest whose nesting reaches 9 levels (spec > template > spec > containers > env > "
    "valueFrom > secretKeyRef), every level meaningful.")

add("ok-nest-md-project-outline", "healthy_nesting", T('''
**Website redesign: project outline**

- **1. Discovery** (weeks 1-2)
  - Stakeholder interviews
    - Marketing: campaign landing pages, analytics needs
    - Support: most common customer questions
    - Sales: what prospects ask before buying
  - Analytics review
    - Top 20 pages by traffic
    - Drop-off points in the signup funnel
  - Competitor scan (3-5 sites)
- **2. Design** (weeks 3-6)
  - Information architecture
    - New sitemap
    - Navigation labels tested with 5 users
  - Wireframes for key templates
    - Home
    - Product page
      - Pricing table
      - FAQ accordion
    - Blog post
  - Visual design & design system
- **3. Build** (weeks 7-11)
  - Component library in Storybook
  - CMS setup and content migration
  - Accessibility pass (WCAG 2.2 AA)
- **4. Launch** (week 12)
  - Redirect map from old URLs
  - Soft launch to 10% of traffic
  - Full launch + monitoring
'''), "stop",
    "Give me a nested outline for a website redesign project.",
    "A nested bullet outline that reaches 4 levels only where it adds detail; each item is distinct and "
    "siblings are added at every level.")

add("ok-nest-python-grid-search", "healthy_nesting", T('''
```python
import itertools
import math


def evaluate(model_cls, X_train, y_train, X_val, y_val, params):
    model = model_cls(**params)
    model.fit(X_train, y_train)
    return model.score(X_val, y_val)


def grid_search(model_cls, grid, folds, log=print):
    """Exhaustive search over `grid` (dict of lists) using pre-split folds."""
    best_score, best_params = -math.inf, None
    keys = list(grid)
    for values in itertools.product(*(grid[k] for k in keys)):
        params = dict(zip(keys, values))
        scores = []
        for fold_idx, (X_tr, y_tr, X_va, y_va) in enumerate(folds):
            try:
                score = evaluate(model_cls, X_tr, y_tr, X_va, y_va, params)
            except ValueError as exc:
                # Some parameter combinations are invalid for this model.
                log(f"skip {params}: {exc}")
                break
            else:
                scores.append(score)
                if fold_idx >= 1 and max(scores) < best_score - 0.1:
                    # Clearly worse than the best so far; stop early.
                    if log is not None:
                        log(f"prune {params} after {fold_idx + 1} folds")
                    break
        else:
            mean = sum(scores) / len(scores)
            if mean > best_score:
                best_score, best_params = mean, params
    return best_params, best_score
```

The deepest block is five levels in, which is about the limit before it's worth extracting a helper. The `for ... else` clause runs only when the fold loop finishes without `break`, so skipped and pruned combinations are never considered for "best".
'''), "stop",
    "Write a simple grid search with cross-validation folds and early pruning in plain Python.",
    "Real code with 5-6 levels of indentation (def > for > for > try/else > if > if), each level doing "
    "something different; it ends with an explanation.")

add("ok-nest-json-schema", "healthy_nesting", T('''
```json
{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://example.com/schemas/order.json",
  "title": "Order",
  "type": "object",
  "required": ["id", "customer", "items"],
  "properties": {
    "id": {"type": "string", "pattern": "^ord_[A-Za-z0-9]{10}$"},
    "customer": {
      "type": "object",
      "required": ["email"],
      "properties": {
        "email": {"type": "string", "format": "email"},
        "name": {"type": "string"},
        "address": {
          "type": "object",
          "properties": {
            "line1": {"type": "string"},
            "city": {"type": "string"},
            "postcode": {"type": "string"},
            "country": {"type": "string", "minLength": 2, "maxLength": 2}
          },
          "required": ["line1", "city", "country"]
        }
      }
    },
    "items": {
      "type": "array",
      "minItems": 1,
      "items": {
        "type": "object",
        "required": ["sku", "quantity"],
        "properties": {
          "sku": {"type": "string"},
          "quantity": {"type": "integer", "minimum": 1},
          "unit_price": {"type": "number", "minimum": 0}
        }
      }
    },
    "status": {"enum": ["pending", "paid", "shipped", "cancelled"]}
  },
  "additionalProperties": false
}
```

`customer.address` is optional, but if it's present it must have `line1`, `city` and a two-letter `country` code.
'''), "stop",
    "Write a JSON Schema for an order with customer (with optional address) and line items.",
    "A JSON Schema nested about 7 levels (properties > customer > properties > address > properties > country), "
    "with varied keys and constraints at each level.")

add("ok-nest-dir-tree", "healthy_nesting", T('''
A layout that scales well for a small Python package:

```
weatherkit/
\u251c\u2500\u2500 pyproject.toml
\u251c\u2500\u2500 README.md
\u251c\u2500\u2500 src/
\u2502   \u2514\u2500\u2500 weatherkit/
\u2502       \u251c\u2500\u2500 __init__.py
\u2502       \u251c\u2500\u2500 cli.py
\u2502       \u251c\u2500\u2500 client.py
\u2502       \u2514\u2500\u2500 providers/
\u2502           \u251c\u2500\u2500 __init__.py
\u2502           \u251c\u2500\u2500 base.py
\u2502           \u251c\u2500\u2500 openmeteo.py
\u2502           \u2514\u2500\u2500 metoffice.py
\u2514\u2500\u2500 tests/
    \u251c\u2500\u2500 conftest.py
    \u251c\u2500\u2500 test_client.py
    \u2514\u2500\u2500 providers/
        \u251c\u2500\u2500 fixtures/
        \u2502   \u2514\u2500\u2500 openmeteo_london.json
        \u2514\u2500\u2500 test_openmeteo.py
```

- The `src/` layout stops tests from accidentally importing the package from the working directory instead of the installed version.
- `providers/base.py` holds the abstract `Provider` class; each backend gets its own module.
- Mirror the package structure in `tests/` so it's obvious where a test belongs.
'''), "stop",
    "Suggest a folder structure for a small Python package that wraps several weather APIs, with tests.",
    "A directory tree 4-5 levels deep where each level has several different entries; compare the degenerate "
    "'src/src/src' tree.")

add("ok-nest-html-nav-3-levels", "healthy_nesting", T('''
```html
<nav class="main-nav" aria-label="Main">
  <ul>
    <li><a href="/">Home</a></li>
    <li>
      <a href="/shop">Shop</a>
      <ul class="submenu">
        <li>
          <a href="/shop/women">Women</a>
          <ul class="submenu">
            <li><a href="/shop/women/dresses">Dresses</a></li>
            <li><a href="/shop/women/knitwear">Knitwear</a></li>
            <li><a href="/shop/women/shoes">Shoes</a></li>
          </ul>
        </li>
        <li>
          <a href="/shop/men">Men</a>
          <ul class="submenu">
            <li><a href="/shop/men/shirts">Shirts</a></li>
            <li><a href="/shop/men/outerwear">Outerwear</a></li>
            <li><a href="/shop/men/shoes">Shoes</a></li>
          </ul>
        </li>
        <li><a href="/shop/sale">Sale</a></li>
      </ul>
    </li>
    <li><a href="/journal">Journal</a></li>
    <li><a href="/contact">Contact</a></li>
  </ul>
</nav>
```

Show the nested `.submenu` lists on hover and on keyboard focus:

```css
.main-nav .submenu { display: none; }
.main-nav li:hover > .submenu,
.main-nav li:focus-within > .submenu { display: block; }
```
'''), "stop",
    "HTML for a shop navigation menu: Home, Shop (Women and Men, each with 3 categories, plus Sale), Journal, Contact.",
    "Hard: nested <ul><li> three levels deep, but every level has distinct sibling items exactly as requested, "
    "and every element is closed.")

_org = {"name": "Dana Whitfield", "title": "CEO", "children": [
    {"name": "Raj Patel", "title": "CTO", "children": [
        {"name": "Mei Chen", "title": "Engineering Manager, Platform", "children": [
            {"name": "Tom\u00e1s Silva", "title": "Senior Engineer", "children": []},
            {"name": "Grace Obi", "title": "Engineer", "children": []}]},
        {"name": "Jonas Berg", "title": "Engineering Manager, Mobile", "children": [
            {"name": "Aisha Rahman", "title": "iOS Engineer", "children": []},
            {"name": "Leo Martin", "title": "Android Engineer", "children": []}]}]},
    {"name": "Sofia Russo", "title": "COO", "children": [
        {"name": "Ben Adler", "title": "Head of Support", "children": [
            {"name": "Nia Thompson", "title": "Support Lead", "children": []}]},
        {"name": "Hana Sato", "title": "Head of Finance", "children": []}]}]}
add("ok-nest-json-org-chart", "healthy_nesting",
    "```json\n" + json.dumps(_org, indent=2, ensure_ascii=False) + "\n```\n\nLeaf nodes have an empty `children` "
    "array rather than no key, so your recursive renderer can treat every node the same way.", "stop",
    "Give me an example org chart as nested JSON (name, title, children) for a small company, 4 levels deep.",
    "Hard: repeated '\"children\": [' nesting four levels deep, but with real siblings and different people at "
    "every level, as asked, and fully closed.")

add("ok-nest-maven-pom", "healthy_nesting", T('''
```xml
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>

  <groupId>com.example</groupId>
  <artifactId>invoice-service</artifactId>
  <version>0.1.0-SNAPSHOT</version>

  <properties>
    <maven.compiler.release>21</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>

  <dependencies>
    <dependency>
      <groupId>com.fasterxml.jackson.core</groupId>
      <artifactId>jackson-databind</artifactId>
      <version>2.17.1</version>
    </dependency>
    <dependency>
      <groupId>org.junit.jupiter</groupId>
      <artifactId>junit-jupiter</artifactId>
      <version>5.10.2</version>
      <scope>test</scope>
    </dependency>
  </dependencies>

  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-surefire-plugin</artifactId>
        <version>3.2.5</version>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-shade-plugin</artifactId>
        <version>3.5.3</version>
        <executions>
          <execution>
            <phase>package</phase>
            <goals>
              <goal>shade</goal>
            </goals>
            <configuration>
              <transformers>
                <transformer implementation="org.apache.maven.plugins.shade.resource.ManifestResourceTransformer">
                  <mainClass>com.example.invoice.Main</mainClass>
                </transformer>
              </transformers>
            </configuration>
          </execution>
        </executions>
      </plugin>
    </plugins>
  </build>
</project>
```

Run `mvn package` and you'll get a runnable fat JAR in `target/`.
'''), "stop",
    "Write a pom.xml for a Java 21 service using Jackson and JUnit 5 that builds a runnable fat jar.",
    "A Maven POM nested about 9 levels (build > plugins > plugin > executions > execution > configuration > "
    "transformers > transformer), all standard and closed.")

add("ok-nest-terraform", "healthy_nesting", T('''
```hcl
resource "aws_s3_bucket" "assets" {
  bucket = "acme-prod-assets"
}

resource "aws_s3_bucket_lifecycle_configuration" "assets" {
  bucket = aws_s3_bucket.assets.id

  rule {
    id     = "archive-old-uploads"
    status = "Enabled"

    filter {
      prefix = "uploads/"
    }

    transition {
      days          = 30
      storage_class = "STANDARD_IA"
    }

    transition {
      days          = 180
      storage_class = "GLACIER"
    }

    noncurrent_version_expiration {
      noncurrent_days = 90
    }
  }
}

resource "aws_cloudfront_distribution" "assets" {
  enabled = true

  origin {
    domain_name              = aws_s3_bucket.assets.bucket_regional_domain_name
    origin_id                = "s3-assets"
    origin_access_control_id = aws_cloudfront_origin_access_control.assets.id
  }

  default_cache_behavior {
    target_origin_id       = "s3-assets"
    viewer_protocol_policy = "redirect-to-https"
    allowed_methods        = ["GET", "HEAD"]
    cached_methods         = ["GET", "HEAD"]
    cache_policy_id        = "658327ea-f89d-4fab-a63d-7e88639e58f6" # Managed-CachingOptimized
  }

  restrictions {
    geo_restriction {
      restriction_type = "none"
    }
  }

  viewer_certificate {
    cloudfront_default_certificate = true
  }
}
```

You'll also need an `aws_cloudfront_origin_access_control` resource and a bucket policy that allows the distribution to read from the bucket.
'''), "stop",
    "Terraform for an S3 bucket with lifecycle rules (IA after 30 days, Glacier after 180) behind CloudFront.",
    "HCL with nested blocks 3 levels deep and repeated block types (two 'transition' blocks) with different "
    "values; normal infrastructure code.")

add("ok-nest-scheme-deep-parens", "healthy_nesting", T('''
```scheme
(define (flatten tree)
  (cond ((null? tree) '())
        ((pair? tree)
         (append (flatten (car tree))
                 (flatten (cdr tree))))
        (else (list tree))))

(define (tree-depth tree)
  (if (not (pair? tree))
      0
      (max (+ 1 (tree-depth (car tree)))
           (tree-depth (cdr tree)))))

;; Examples
(flatten '(1 (2 (3 4)) ((5)) 6))      ; => (1 2 3 4 5 6)
(tree-depth '(1 (2 (3 4)) ((5)) 6))   ; => 3
```

`flatten` walks both the `car` and the `cdr`, so it handles any nesting depth. `tree-depth` counts how many times you go "down" through a `car`, which is why `((5))` contributes a depth of 2 but the top-level list as a whole is depth 3.
'''), "stop",
    "Write a Scheme function to flatten a nested list, and one to compute its nesting depth.",
    "Lisp code with many closing parentheses and a nested quoted list in the examples; the nesting is the data "
    "being handled, not runaway output.")

add("ok-nest-email-quotes", "healthy_nesting", T('''
Here's how a reply chain looks when each message quotes the previous one:

```
Sounds good, I'll book the room for Thursday 3pm.

Ravi

> On Tue, 11 Mar 2025 at 16:02, Claire Dubois <claire@example.com> wrote:
> Thursday works for me too. Could we make it 3 instead of 2?
>
> > On Tue, 11 Mar 2025 at 14:40, Ravi Menon <ravi@example.com> wrote:
> > How about Thursday at 2pm? I can do Wednesday morning as a backup.
> >
> > > On Mon, 10 Mar 2025 at 09:15, Claire Dubois <claire@example.com> wrote:
> > > Hi Ravi, can we find an hour this week to go over the Q2 budget?
```

Each level of quoting adds one `>`. Most clients collapse anything beyond the first level, which is why "bottom-posting" with trimmed quotes is easier to read in long threads: quote only the part you're answering.
'''), "stop",
    "Show me what a plain-text email thread with nested quoted replies looks like.",
    "Hard: quote markers nest '> > >', but only three levels, each with a different real message, exactly "
    "illustrating what was asked.")

add("ok-nest-legal-outline", "healthy_nesting", T('''
**SERVICES AGREEMENT: Section 7 (Termination)**

7. Termination

7.1 Termination for convenience. Either party may terminate this Agreement on sixty (60) days' written notice.

7.2 Termination for cause. Either party may terminate this Agreement immediately on written notice if the other party:
  7.2.1 commits a material breach and fails to remedy it within thirty (30) days of being notified;
  7.2.2 becomes insolvent, including where it:
    7.2.2.1 is unable to pay its debts as they fall due;
    7.2.2.2 enters into a composition or arrangement with its creditors; or
    7.2.2.3 has a receiver or administrator appointed over any of its assets; or
  7.2.3 ceases, or threatens to cease, to carry on business.

7.3 Effect of termination. On termination:
  7.3.1 the Client shall pay all fees for Services performed up to the termination date;
  7.3.2 each party shall return or destroy the other's Confidential Information; and
  7.3.3 Sections 8 (Confidentiality), 10 (Liability) and 12 (Governing Law) survive.

7.4 No prejudice. Termination does not affect any rights or remedies that accrued before the termination date.
'''), "stop",
    "Draft a termination clause for a services agreement with numbered sub-clauses.",
    "Hard: outline numbering reaches 7.2.2.3, four levels, but each clause is different legal content and the "
    "numbering returns to 7.3 and 7.4.")

_html_cut = P('''
```html
<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Trail Report: Mount Tamsin Loop</title>
  <link rel="stylesheet" href="report.css">
</head>
<body>
  <article class="trail-report">
    <header>
      <h1>Mount Tamsin Loop</h1>
      <p class="meta">
        <span class="distance">14.2 km</span> &middot;
        <span class="elevation">+860 m</span> &middot;
        <span class="difficulty difficulty--hard">Hard</span>
      </p>
    </header>

    <section class="conditions">
      <h2>Conditions (updated 3 May)</h2>
      <ul>
        <li><strong>Trail:</strong> dry to the saddle, muddy for 1 km on the north descent.</li>
        <li><strong>Snow:</strong> patches above 1,400 m; microspikes recommended before 10 am.</li>
        <li><strong>Water:</strong> the spring at km 6 is running.</li>
      </ul>
    </section>

    <section class="route">
      <h2>Route</h2>
      <ol class="waypoints">
        <li>
          <h3>Trailhead to Fern Gully (0-3.5 km)</h3>
          <p>Wide forest track, gentle climb. Keep left at the first fork.</p>
        </li>
        <li>
          <h3>Fern Gully to the saddle (3.5-7 km)</h3>
          <p>Steep switchbacks. The only real shade on the route.</p>
          <figure>
            <img src="img/saddle.jpg" alt="View east from the saddle over the reservoir" width="800" height="533">
            <figcaption>Looking east from the saddle.</figcaption>
          </figure>
        </li>
        <li>
          <h3>Summit spur (7-8.4 km, optional)</h3>
          <p>Rocky out-and-back to the trig point. Skip it in high wind.</p>
        </li>
        <li>
          <h3>North descent (8.4-14.2 km)</h3>
          <p>Loose scree for the first kilometre, then a long traverse back through the pines to the car
''')
add("ok-nest-html-trail-cut", "healthy_nesting", _html_cut.rstrip(), "length",
    "Write a semantic HTML page for a hiking trail report with conditions, a waypoint list with photos, and a "
    "map section.",
    "A healthy, well-structured HTML page (about 7 levels deep) cut by max_tokens mid-paragraph before the map "
    "section; the nesting is sensible and varied.")


# ============================================================================
# HEALTHY: healthy_repetitive_code
# Code that is repetitive by nature: unrolled loops, test tables, enums,
# constant tables, utility classes.
# ============================================================================

add("ok-code-c-unrolled-sum", "healthy_repetitive_code", T(r'''
Here's a version unrolled by 8 with four independent accumulators, which lets the CPU overlap the additions instead of waiting on one dependency chain:

```c
#include <stddef.h>

double sum_unrolled(const double *a, size_t n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        s0 += a[i + 0];
        s1 += a[i + 1];
        s2 += a[i + 2];
        s3 += a[i + 3];
        s0 += a[i + 4];
        s1 += a[i + 5];
        s2 += a[i + 6];
        s3 += a[i + 7];
    }
    for (; i < n; i++) {   /* leftover elements */
        s0 += a[i];
    }
    return (s0 + s1) + (s2 + s3);
}
```

Two caveats:
- Because floating-point addition isn't associative, the result can differ from a simple loop in the last few bits.
- With `-O3 -ffast-math` GCC and Clang will often vectorise the plain loop themselves; benchmark before keeping the manual version.
'''), "stop",
    "Can you manually unroll my array sum loop in C to make it faster?",
    "Eight near-identical accumulate lines are the point of loop unrolling (as requested); indices differ and "
    "the function is complete, with caveats.")

add("ok-code-pytest-parametrize", "healthy_repetitive_code", T('''
```python
import pytest
from slugify_utils import slugify


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Hello World", "hello-world"),
        ("  leading and trailing  ", "leading-and-trailing"),
        ("Multiple   spaces", "multiple-spaces"),
        ("Already-slugged", "already-slugged"),
        ("Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e", "cafe-creme-brulee"),
        ("Stra\u00dfe", "strasse"),
        ("100% natural!", "100-natural"),
        ("C++ & Rust", "c-rust"),
        ("under_score_name", "under-score-name"),
        ("---dashes---", "dashes"),
        ("", ""),
        ("\u65e5\u672c\u8a9e", ""),
    ],
)
def test_slugify(text, expected):
    assert slugify(text) == expected


def test_slugify_max_length_does_not_cut_words():
    assert slugify("the quick brown fox", max_length=12) == "the-quick"
```

The Japanese case documents current behaviour (non-Latin scripts are dropped). If you later add transliteration, update that expectation rather than deleting the test.
'''), "stop",
    "Write pytest tests for my slugify function covering edge cases.",
    "A parametrize table of similar (input, expected) tuples, each a different edge case; ends with a separate "
    "test and a note.")

_http = [(200, "OK"), (201, "CREATED"), (202, "ACCEPTED"), (204, "NO_CONTENT"), (301, "MOVED_PERMANENTLY"),
         (302, "FOUND"), (304, "NOT_MODIFIED"), (307, "TEMPORARY_REDIRECT"), (308, "PERMANENT_REDIRECT"),
         (400, "BAD_REQUEST"), (401, "UNAUTHORIZED"), (403, "FORBIDDEN"), (404, "NOT_FOUND"),
         (405, "METHOD_NOT_ALLOWED"), (409, "CONFLICT"), (410, "GONE"), (415, "UNSUPPORTED_MEDIA_TYPE"),
         (422, "UNPROCESSABLE_ENTITY"), (429, "TOO_MANY_REQUESTS"), (500, "INTERNAL_SERVER_ERROR"),
         (501, "NOT_IMPLEMENTED"), (502, "BAD_GATEWAY"), (503, "SERVICE_UNAVAILABLE"), (504, "GATEWAY_TIMEOUT")]
add("ok-code-http-enum", "healthy_repetitive_code",
    "```python\nfrom enum import IntEnum\n\n\nclass Status(IntEnum):\n    \"\"\"HTTP status codes used by our API.\"\"\"\n\n"
    + "\n".join("    {} = {}".format(n, c) for c, n in _http)
    + "\n\n    @property\n    def is_error(self) -> bool:\n        return self >= 400\n```\n\n"
      "Python already ships `http.HTTPStatus` with all of these, so you could also just use that; a custom enum "
      "is handy if you want to restrict handlers to the subset your API actually returns.", "stop",
    "Write a Python IntEnum of the HTTP status codes our REST API uses (the common 2xx-5xx ones).",
    "A long enum of NAME = code lines, each a different real HTTP status, with a method and a note: repetitive "
    "by nature.")


def _css_spacing(limit=None):
    scale = [("0", "0"), ("1", "0.25rem"), ("2", "0.5rem"), ("3", "0.75rem"), ("4", "1rem"), ("5", "1.25rem"),
             ("6", "1.5rem"), ("8", "2rem"), ("10", "2.5rem"), ("12", "3rem"), ("16", "4rem")]
    props = [("m", "margin"), ("mt", "margin-top"), ("mr", "margin-right"), ("mb", "margin-bottom"),
             ("ml", "margin-left"), ("p", "padding"), ("pt", "padding-top"), ("pr", "padding-right"),
             ("pb", "padding-bottom"), ("pl", "padding-left")]
    out = ["/* Spacing utilities: 4px (0.25rem) base scale */", ""]
    for short, prop in props:
        out.append("/* {} */".format(prop))
        for k, v in scale:
            out.append(".{}-{} {{ {}: {}; }}".format(short, k, prop, v))
        out.append("")
    return "\n".join(out)


add("ok-code-css-utilities", "healthy_repetitive_code",
    "```css\n" + _css_spacing().split("/* margin-left */")[0].rstrip() + "\n"
    + "\n/* auto margins for centring */\n.mx-auto { margin-left: auto; margin-right: auto; }\n```\n\n"
      "Padding classes follow exactly the same pattern (`.p-*`, `.pt-*`, ...). Want me to add those and the "
      "`mx`/`my` axis variants too?", "stop",
    "Write CSS margin utility classes (m, mt, mr, mb) on a 0.25rem scale like Tailwind's.",
    "Dozens of '.mt-4 { margin-top: 1rem; }' lines are what utility CSS is; values follow a real scale, four "
    "groups, then it stops and offers more.")

add("ok-code-go-iota", "healthy_repetitive_code", T(r'''
```go
package token

// Kind identifies the lexical class of a token.
type Kind int

const (
	Illegal Kind = iota
	EOF
	Comment

	// Literals
	Ident
	Int
	Float
	String

	// Operators
	Plus     // +
	Minus    // -
	Star     // *
	Slash    // /
	Percent  // %
	Assign   // =
	Eq       // ==
	NotEq    // !=
	Lt       // <
	LtEq     // <=
	Gt       // >
	GtEq     // >=

	// Delimiters
	LParen   // (
	RParen   // )
	LBrace   // {
	RBrace   // }
	Comma    // ,
	Semicolon // ;

	// Keywords
	Func
	Let
	If
	Else
	Return
)

var keywords = map[string]Kind{
	"func":   Func,
	"let":    Let,
	"if":     If,
	"else":   Else,
	"return": Return,
}

// Lookup returns the keyword kind for ident, or Ident if it isn't a keyword.
func Lookup(ident string) Kind {
	if k, ok := keywords[ident]; ok {
		return k
	}
	return Ident
}
```

Run `stringer -type=Kind` to generate a `String()` method so tokens print by name in error messages.
'''), "stop",
    "Define token kinds for a small lexer in Go using iota.",
    "A long iota const block with one name per line and grouped comments: an enumeration, each entry different, "
    "followed by real functions.")

add("ok-code-js-keycode-switch", "healthy_repetitive_code", T(r'''
```javascript
function directionFromKey(event) {
  switch (event.key) {
    case "ArrowUp":
    case "w":
    case "W":
      return { dx: 0, dy: -1 };
    case "ArrowDown":
    case "s":
    case "S":
      return { dx: 0, dy: 1 };
    case "ArrowLeft":
    case "a":
    case "A":
      return { dx: -1, dy: 0 };
    case "ArrowRight":
    case "d":
    case "D":
      return { dx: 1, dy: 0 };
    default:
      return null;
  }
}

document.addEventListener("keydown", (event) => {
  const dir = directionFromKey(event);
  if (dir) {
    event.preventDefault(); // stop arrow keys scrolling the page
    player.move(dir.dx, dir.dy);
  }
});
```

Using `event.key` rather than the deprecated `keyCode` means it works regardless of keyboard layout for the arrows. For WASD on AZERTY keyboards, consider `event.code` (`"KeyW"`, etc.), which refers to physical key positions.
'''), "stop",
    "JavaScript to move a player with arrow keys and WASD.",
    "A switch with many parallel case lines, each mapping a different key; complete, sensible code.")

_fields = [("String", "id"), ("String", "email"), ("String", "displayName"), ("int", "age"), ("boolean", "active"),
           ("Instant", "createdAt"), ("Instant", "updatedAt"), ("List<String>", "roles")]


def _java_bean():
    out = ["```java", "import java.time.Instant;", "import java.util.List;", "", "public class User {", ""]
    for t, n in _fields:
        out.append("    private {} {};".format(t, n))
    out.append("")
    for t, n in _fields:
        cap = n[0].upper() + n[1:]
        getter = ("is" if t == "boolean" else "get") + cap
        out += ["    public {} {}() {{".format(t, getter), "        return {};".format(n), "    }", "",
                "    public void set{}({} {}) {{".format(cap, t, n), "        this.{0} = {0};".format(n), "    }", ""]
    out[-1] = "}"
    out.append("```")
    out.append("")
    out.append("If you're on Java 16+, a `record` removes all of this boilerplate: "
               "`public record User(String id, String email, ...) {}`. "
               "Or use Lombok's `@Getter @Setter` if you need mutability.")
    return "\n".join(out)


add("ok-code-java-getters-setters", "healthy_repetitive_code", _java_bean(), "stop",
    "Write a Java User class with private fields id, email, displayName, age, active, createdAt, updatedAt, roles "
    "and getters/setters.",
    "Boilerplate getters and setters for eight fields: the same shape repeated, as requested, each for a "
    "different field; ends with a tip.")

add("ok-code-unittest-roman", "healthy_repetitive_code", T(r'''
```python
import unittest
from roman import to_roman, from_roman


class TestToRoman(unittest.TestCase):
    def test_single_symbols(self):
        self.assertEqual(to_roman(1), "I")
        self.assertEqual(to_roman(5), "V")
        self.assertEqual(to_roman(10), "X")
        self.assertEqual(to_roman(50), "L")
        self.assertEqual(to_roman(100), "C")
        self.assertEqual(to_roman(500), "D")
        self.assertEqual(to_roman(1000), "M")

    def test_subtractive_forms(self):
        self.assertEqual(to_roman(4), "IV")
        self.assertEqual(to_roman(9), "IX")
        self.assertEqual(to_roman(40), "XL")
        self.assertEqual(to_roman(90), "XC")
        self.assertEqual(to_roman(400), "CD")
        self.assertEqual(to_roman(900), "CM")

    def test_composites(self):
        self.assertEqual(to_roman(1994), "MCMXCIV")
        self.assertEqual(to_roman(2024), "MMXXIV")
        self.assertEqual(to_roman(3999), "MMMCMXCIX")

    def test_out_of_range(self):
        for bad in (0, -1, 4000):
            with self.assertRaises(ValueError):
                to_roman(bad)


class TestRoundTrip(unittest.TestCase):
    def test_all_values(self):
        for n in range(1, 4000):
            self.assertEqual(from_roman(to_roman(n)), n)


if __name__ == "__main__":
    unittest.main()
```
'''), "stop",
    "unittest tests for to_roman/from_roman.",
    "Many assertEqual lines with the same shape but different, correct input/output pairs, grouped into "
    "meaningful test methods.")

add("ok-code-sql-migration", "healthy_repetitive_code", T(r'''
```sql
-- 2025_03_14_add_shipping_fields.sql
BEGIN;

ALTER TABLE orders ADD COLUMN shipping_name        text;
ALTER TABLE orders ADD COLUMN shipping_line1       text;
ALTER TABLE orders ADD COLUMN shipping_line2       text;
ALTER TABLE orders ADD COLUMN shipping_city        text;
ALTER TABLE orders ADD COLUMN shipping_region      text;
ALTER TABLE orders ADD COLUMN shipping_postcode    text;
ALTER TABLE orders ADD COLUMN shipping_country     char(2);
ALTER TABLE orders ADD COLUMN shipping_phone       text;
ALTER TABLE orders ADD COLUMN shipped_at           timestamptz;
ALTER TABLE orders ADD COLUMN tracking_number      text;

-- Backfill from the customer's default address for orders that haven't shipped yet
UPDATE orders o
SET shipping_name     = c.full_name,
    shipping_line1    = a.line1,
    shipping_line2    = a.line2,
    shipping_city     = a.city,
    shipping_region   = a.region,
    shipping_postcode = a.postcode,
    shipping_country  = a.country
FROM customers c
JOIN addresses a ON a.id = c.default_address_id
WHERE o.customer_id = c.id
  AND o.shipped_at IS NULL;

CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_tracking_number_idx ON orders (tracking_number);

COMMIT;
```

One catch: `CREATE INDEX CONCURRENTLY` can't run inside a transaction block in PostgreSQL. Move that statement to its own migration file (or after the `COMMIT`).
'''), "stop",
    "Write a Postgres migration that adds shipping address fields, shipped_at and tracking_number to orders, and "
    "backfills from the customer's default address.",
    "Ten parallel ALTER TABLE ADD COLUMN lines with different column names and types, followed by a real backfill "
    "and an index: normal migration code.")

add("ok-code-rust-opcode-match", "healthy_repetitive_code", T(r'''
```rust
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Nop,
    Push(u8),
    Pop,
    Add,
    Sub,
    Mul,
    Div,
    Jmp(u16),
    Jz(u16),
    Halt,
}

pub fn decode(bytes: &[u8], pc: usize) -> Result<(Op, usize), String> {
    let byte = *bytes.get(pc).ok_or("pc out of range")?;
    let arg8 = || bytes.get(pc + 1).copied().ok_or("missing u8 operand");
    let arg16 = || -> Result<u16, &str> {
        let lo = *bytes.get(pc + 1).ok_or("missing u16 operand")?;
        let hi = *bytes.get(pc + 2).ok_or("missing u16 operand")?;
        Ok(u16::from_le_bytes([lo, hi]))
    };
    let decoded = match byte {
        0x00 => (Op::Nop, 1),
        0x01 => (Op::Push(arg8()?), 2),
        0x02 => (Op::Pop, 1),
        0x10 => (Op::Add, 1),
        0x11 => (Op::Sub, 1),
        0x12 => (Op::Mul, 1),
        0x13 => (Op::Div, 1),
        0x20 => (Op::Jmp(arg16()?), 3),
        0x21 => (Op::Jz(arg16()?), 3),
        0xFF => (Op::Halt, 1),
        other => return Err(format!("unknown opcode 0x{other:02X} at {pc}")),
    };
    Ok(decoded)
}
```

`decode` returns the instruction plus its length, so the VM loop can do `pc += len` except after jumps.
'''), "stop",
    "Write a bytecode decoder in Rust for a tiny stack VM (nop, push u8, pop, add, sub, mul, div, jmp, jz, halt).",
    "A match arm per opcode: parallel lines by design, each with a distinct opcode, variant and length.")


def _crc_table():
    tbl = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (0xEDB88320 ^ (c >> 1)) if c & 1 else (c >> 1)
        tbl.append(c)
    rows = []
    for i in range(0, 256, 4):
        rows.append("    " + ", ".join("0x{:08X}".format(v) for v in tbl[i:i + 4]) + ",")
    return ("Here's the standard CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) lookup table and the routine "
            "that uses it:\n\n```c\n#include <stddef.h>\n#include <stdint.h>\n\nstatic const uint32_t crc32_table[256] = {\n"
            + "\n".join(rows) + "\n};\n\nuint32_t crc32(const uint8_t *buf, size_t len) {\n    uint32_t c = 0xFFFFFFFFu;\n"
            "    for (size_t i = 0; i < len; i++) {\n        c = crc32_table[(c ^ buf[i]) & 0xFF] ^ (c >> 8);\n    }\n"
            "    return c ^ 0xFFFFFFFFu;\n}\n```\n\nSanity check: `crc32(\"123456789\", 9)` should return `0xCBF43926`.")


add("ok-code-crc32-table", "healthy_repetitive_code", _crc_table(), "stop",
    "Give me a CRC-32 lookup table in C with the function that uses it.",
    "64 rows of hex constants in identical format, but it is the real 256-entry CRC-32 table (values all "
    "different) followed by the function and a test vector.")

add("ok-code-argparse", "healthy_repetitive_code", T(r'''
```python
import argparse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="resize",
        description="Batch-resize images in a folder.",
    )
    p.add_argument("input_dir", help="folder containing the source images")
    p.add_argument("output_dir", help="where resized images are written")
    p.add_argument("-w", "--width", type=int, help="target width in pixels")
    p.add_argument("-H", "--height", type=int, help="target height in pixels")
    p.add_argument("--keep-aspect", action="store_true", help="preserve aspect ratio (default: off)")
    p.add_argument("-f", "--format", choices=["jpeg", "png", "webp"], default="jpeg", help="output format")
    p.add_argument("-q", "--quality", type=int, default=85, help="JPEG/WebP quality, 1-100 (default: 85)")
    p.add_argument("-r", "--recursive", action="store_true", help="also process subfolders")
    p.add_argument("--overwrite", action="store_true", help="replace existing files in output_dir")
    p.add_argument("-j", "--jobs", type=int, default=1, help="number of worker processes")
    p.add_argument("-v", "--verbose", action="count", default=0, help="-v for info, -vv for debug")
    p.add_argument("--dry-run", action="store_true", help="show what would be done without writing files")
    return p


if __name__ == "__main__":
    args = build_parser().parse_args()
    if args.width is None and args.height is None:
        build_parser().error("give at least one of --width or --height")
    print(args)
```
'''), "stop",
    "Write the argparse setup for an image batch resize CLI with the usual options.",
    "A run of p.add_argument(...) lines, each a different option with its own type and help text; ends with "
    "validation code.")

add("ok-code-makefile", "healthy_repetitive_code", T('''
```makefile
.PHONY: help install lint format typecheck test test-unit test-integration coverage build clean

PY ?= python3
SRC := src tests

help:  ## Show this help
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "} {printf "%-18s %s\\n", $$1, $$2}'

install:  ## Install the package with dev dependencies
	$(PY) -m pip install -e ".[dev]"

lint:  ## Run ruff
	ruff check $(SRC)

format:  ## Auto-format with ruff
	ruff format $(SRC)

typecheck:  ## Run mypy
	mypy src

test: test-unit test-integration  ## Run all tests

test-unit:  ## Fast unit tests
	pytest tests/unit -q

test-integration:  ## Integration tests (need Docker)
	pytest tests/integration -q

coverage:  ## Unit tests with coverage report
	pytest tests/unit --cov=src --cov-report=term-missing

build:  ## Build sdist and wheel
	$(PY) -m build

clean:  ## Remove build artefacts
	rm -rf build dist .pytest_cache .mypy_cache .coverage
```

`make help` prints every target with its `##` description, so new contributors can discover them.
'''), "stop",
    "Write a Makefile for a Python project with install, lint, format, typecheck, test, coverage, build and clean "
    "targets, plus a self-documenting help target.",
    "Many targets with the same 'name: ## description' layout but different commands; a standard, complete "
    "Makefile.")


def _css_cut():
    full = _css_spacing()
    return "Here's the full spacing scale:\n\n```css\n" + full


_cc = _css_cut()
add("ok-code-css-spacing-cut", "healthy_repetitive_code", _cc[:_cc.index(".pb-8 {") + 11], "length",
    "Generate the full set of margin and padding utility classes (m, mt, mr, mb, ml, p, pt, pr, pb, pl) for the "
    "scale 0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16.",
    "Hard: a very repetitive class list cut by max_tokens at 'padding-bottom', but the user asked for the full "
    "10 \u00d7 11 grid and each line is a different property/value pair.")


def _regs():
    regs = ["CTRL", "STATUS", "INT_ENABLE", "INT_STATUS", "BAUD_DIV", "TX_DATA", "RX_DATA", "FIFO_CTRL",
            "FIFO_LEVEL", "LINE_CTRL", "MODEM_CTRL", "SCRATCH"]
    out = ["```c", "/* UART0 register map (base 0x4000_C000), all registers 32-bit */", "#ifndef UART_REGS_H",
           "#define UART_REGS_H", "", "#define UART0_BASE          0x4000C000u", ""]
    for k, r in enumerate(regs):
        out.append("#define UART_{:<15} (UART0_BASE + 0x{:02X}u)".format(r, 4 * k))
    out += ["", "/* CTRL bits */", "#define UART_CTRL_EN          (1u << 0)", "#define UART_CTRL_TX_EN       (1u << 1)",
            "#define UART_CTRL_RX_EN       (1u << 2)", "#define UART_CTRL_LOOPBACK    (1u << 7)", "",
            "/* STATUS bits */", "#define UART_STATUS_TXE       (1u << 0)  /* TX FIFO empty */",
            "#define UART_STATUS_RXNE      (1u << 1)  /* RX FIFO not empty */",
            "#define UART_STATUS_OVERRUN   (1u << 4)", "", "#define UART_REG(addr) (*(volatile uint32_t *)(addr))", "",
            "#endif /* UART_REGS_H */", "```", "",
            "Offsets step by 4 because each register is one 32-bit word. Access them through `UART_REG(UART_CTRL)` "
            "so the compiler treats every read and write as volatile."]
    return "\n".join(out)


add("ok-code-register-defines", "healthy_repetitive_code", _regs(), "stop",
    "Write a C header with #defines for a UART's registers (12 registers, 32-bit, consecutive) plus the main bit "
    "masks.",
    "Register offsets increasing by 4 with a fixed layout is what a register map is; each define names a "
    "different register, followed by bit masks.")


# ============================================================================
# Write + validate + summary
# ============================================================================

def main():
    ids = [it["id"] for it in ITEMS]
    dup = [i for i, c in Counter(ids).items() if c > 1]
    assert not dup, "duplicate ids: %r" % dup
    for it in ITEMS:
        assert it["label"] == (it["class"] == "written_degenerate"), it["id"]
        assert it["text"] and it["messages"][0]["content"] and it["note"], it["id"]
        assert "\n" not in it["note"], it["id"]
    with open(OUT, "w", encoding="utf-8") as f:
        for it in ITEMS:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")

    print("wrote %d items to %s" % (len(ITEMS), os.path.relpath(OUT)))
    by_shape = Counter((it["label"], it["shape"]) for it in ITEMS)
    for label in (True, False):
        n = sum(c for (lab, _), c in by_shape.items() if lab == label)
        print("label=%s: %d" % (str(label).lower(), n))
        for (lab, shape), c in sorted(by_shape.items()):
            if lab == label:
                print("  %-24s %d" % (shape, c))
    fr = Counter((it["label"], it["finish_reason"]) for it in ITEMS)
    print("finish_reason by label:", {"%s/%s" % (str(k[0]).lower(), k[1]): v for k, v in sorted(fr.items())})
    lens = sorted(len(it["text"]) for it in ITEMS)
    print("text chars: min=%d median=%d max=%d" % (lens[0], lens[len(lens) // 2], lens[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
