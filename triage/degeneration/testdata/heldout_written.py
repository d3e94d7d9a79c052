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
    "the 80s, until max_tokens.")

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
    "climbing past 50, cut by max_tokens.")

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
    "2100s: only the year changes, until max_tokens.")

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
    "Under 'Services' the list opens <ul><li>Web Design again and again, each one level deeper (40+ levels), "
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
    "200 levels, never closing a parenthesis, until max_tokens.")

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
    "Three files were asked; the pyramid keeps nesting readFile(\"file4.txt\"), file5, ... file40 callbacks "
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
    "The three needed loops are written, then loops i4, i5, ... i30 keep being nested inside (over an undefined "
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
    "Every comment has exactly one reply that contains the next, same author and text, nesting 20+ levels with "
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
          + "      " + "    " * d + "    <td>\n", 4800), "length",
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
