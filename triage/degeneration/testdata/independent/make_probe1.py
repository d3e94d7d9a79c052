#!/usr/bin/env python3
"""Build a labelled probe set of degenerate vs healthy LLM responses.

Writes /tmp/probe/probe.jsonl. Deterministic (fixed seeds).
"""
import json
import os
import random
from collections import Counter, defaultdict
from decimal import Decimal, getcontext

random.seed(20240611)
R = random.Random(7)

OUT = "/tmp/probe/probe.jsonl"
ITEMS = []


def add(id_, label, cat, text, fr, prompt, why):
    ITEMS.append({
        "id": id_,
        "label": label,
        "category": cat,
        "text": text,
        "finish_reason": fr,
        "messages": [{"role": "user", "content": prompt}],
        "why": why,
    })


def cut(s, limit, midword=True):
    """Truncate to `limit` chars; if midword, back off so the text ends inside a word."""
    s = s[:limit]
    if midword:
        while len(s) > 2 and not (s[-1].isalnum() and s[-2].isalnum()):
            s = s[:-1]
    return s


def fill(prefix, gen, limit, midword=True):
    """prefix + gen(0) + gen(1) + ... until limit chars, then cut."""
    parts = [prefix]
    n = len(prefix)
    i = 0
    while n < limit + 50:
        u = gen(i)
        parts.append(u)
        n += len(u)
        i += 1
    return cut("".join(parts), limit, midword)


def rep(prefix, unit, times, suffix=""):
    return prefix + unit * times + suffix


# ============================================================================
# DEGENERATE ITEMS (label = True)
# ============================================================================

# ---------------------------------------------------------------- sentence_loop
add("deg-sent-01", True, "sentence_loop",
    fill("The main difference between a list and a tuple in Python is mutability. "
         "Lists are mutable, which means you can add, remove, or change elements after the list is created. "
         "Tuples are immutable, which means that once a tuple is created, you cannot change its elements. ",
         lambda i: "Tuples are immutable, which means that once a tuple is created, you cannot change its elements. ",
         7200),
    "length", "What's the difference between a list and a tuple in Python?",
    "After two correct sentences the same sentence repeats verbatim until the token limit.")

add("deg-sent-02", True, "sentence_loop",
    fill("Romeo and Juliet are two young lovers from feuding families in Verona who fall in love at first sight. "
         "They marry in secret, but a chain of misunderstandings and a banishment lead to a tragic double suicide. "
         "Their deaths finally reconcile the feuding families. ",
         lambda i: "Their deaths finally reconcile the feuding families. ",
         4100),
    "length", "Summarize the plot of Romeo and Juliet in 3 sentences.",
    "The third sentence is repeated dozens of times until max tokens instead of stopping.")

add("deg-sent-03", True, "sentence_loop",
    rep("To boil an egg, place it in a saucepan and cover it with cold water by about an inch. "
        "Bring the water to a boil over medium-high heat. Once it is boiling, turn off the heat and cover the pan. ",
        "Let the egg sit in the hot water for 10 to 12 minutes. ", 23),
    "stop", "How do I boil an egg?",
    "One instruction sentence is repeated 23 times verbatim before the model happens to stop.")

add("deg-sent-04", True, "sentence_loop",
    fill("In French, \"good morning\" is \"Bonjour\" (pronounced bohn-ZHOOR). ",
         lambda i: "\"Good morning\" in French is \"Bonjour\". ",
         2600),
    "length", "How do you say 'good morning' in French?",
    "A one-line answer followed by the same sentence looping until the length limit.")

add("deg-sent-05", True, "sentence_loop",
    fill("Dear Customer,\n\nThank you for reaching out, and I'm sorry to hear that your order has been delayed. "
         "I have checked with our shipping team and your package is currently in transit. ",
         lambda i: "We apologize for any inconvenience this may have caused. ",
         5300),
    "length", "Write a short, polite reply to a customer asking why their order is late.",
    "The apology sentence repeats endlessly, the email never finishes.")

# ---------------------------------------------------------------- paragraph_loop
PHOTO_INTRO = ("Photosynthesis is the process by which green plants, algae, and some bacteria convert light energy "
               "into chemical energy stored in glucose. It takes place mainly in the chloroplasts of leaf cells and "
               "can be summarized by the equation 6CO2 + 6H2O + light -> C6H12O6 + 6O2.\n\n")
PHOTO_LOOP = ("The light-dependent reactions take place in the thylakoid membranes. Chlorophyll absorbs light, which "
              "excites electrons and drives the splitting of water molecules. This releases oxygen as a by-product "
              "and produces ATP and NADPH, which are then used in the Calvin cycle to fix carbon dioxide into sugar.\n\n")
add("deg-para-01", True, "paragraph_loop",
    fill(PHOTO_INTRO + "There are two main stages:\n\n", lambda i: PHOTO_LOOP, 13800),
    "length", "Explain photosynthesis for a high-school biology class.",
    "The paragraph on the light reactions repeats verbatim about ten times until the limit.")

CL_HEAD = ("Dear Hiring Manager,\n\nI am writing to express my interest in the Junior Data Analyst position at "
           "Brightline Analytics. I recently completed my B.Sc. in Statistics at the University of Leeds, where I "
           "developed a strong foundation in data cleaning, visualization, and statistical modelling.\n\n")
CL_LOOP = ("During my internship at Northwind Retail, I built weekly sales dashboards in Power BI and automated a "
           "reporting pipeline in Python that reduced manual work by roughly six hours per week. This experience "
           "taught me how to translate business questions into clear analyses and to communicate results to "
           "non-technical stakeholders.\n\n")
add("deg-para-02", True, "paragraph_loop",
    fill(CL_HEAD, lambda i: CL_LOOP, 4700),
    "length", "Write a cover letter for a junior data analyst position.",
    "The internship paragraph is copied over and over; the letter never reaches a closing.")

PD = ("Stay refreshed wherever you go with the HydraPeak Stainless Steel Bottle. Its double-wall vacuum insulation "
      "keeps drinks ice-cold for 24 hours or hot for 12, while the leak-proof lid and powder-coated finish make it "
      "perfect for the gym, the office, or the trail.\n\n")
add("deg-para-03", True, "paragraph_loop",
    PD * 6,
    "stop", "Write a product description for a 750 ml stainless steel water bottle.",
    "The full product paragraph is emitted six times identically.")

FIB_HEAD = ("This function computes the n-th Fibonacci number recursively.\n\n")
FIB_LOOP = ("If n is less than 2, it returns n directly, so f(0) = 0 and f(1) = 1. Otherwise it calls itself twice, "
            "with n-1 and n-2, and adds the results together. Because each call spawns two more calls, the running "
            "time grows exponentially with n. ")
add("deg-para-04", True, "paragraph_loop",
    fill(FIB_HEAD, lambda i: FIB_LOOP, 3900),
    "length", "What does this function do?\n\ndef f(n):\n    return n if n < 2 else f(n-1) + f(n-2)",
    "A three-sentence explanation block repeats back-to-back until the token limit.")

# ---------------------------------------------------------------- incrementing_loop
VENV_START = ("Here's how to set up a Python virtual environment:\n\n"
              "Step 1: Make sure Python 3 is installed by running `python3 --version`.\n\n"
              "Step 2: Navigate to your project folder with `cd my_project`.\n\n"
              "Step 3: Create the environment with `python3 -m venv venv`.\n\n"
              "Step 4: Activate the virtual environment by running `source venv/bin/activate`.\n\n")
add("deg-inc-01", True, "incrementing_loop",
    fill(VENV_START,
         lambda i: f"Step {i + 5}: Activate the virtual environment by running `source venv/bin/activate`.\n\n",
         8800),
    "length", "How do I set up a Python virtual environment?",
    "From step 5 onward every step is the same instruction with only the step number incrementing.")

WORKOUT = ("Here's a 30-day beginner workout plan:\n\n"
           "Day 1: 20-minute brisk walk and 3 sets of 10 bodyweight squats.\n"
           "Day 2: Upper body - 3 sets of 8 knee push-ups and 3 sets of 12 band rows.\n"
           "Day 3: Rest day. Focus on stretching and drinking plenty of water.\n"
           "Day 4: 25-minute walk with 5 short jogging intervals.\n"
           "Day 5: Core - 3 x 20-second planks, 3 x 10 dead bugs, 3 x 12 glute bridges.\n")
add("deg-inc-02", True, "incrementing_loop",
    fill(WORKOUT,
         lambda i: f"Day {i + 6}: Rest day. Focus on stretching and drinking plenty of water.\n",
         6100),
    "length", "Make me a 30-day beginner workout plan.",
    "Days 6 onwards are identical rest days and the count runs far past day 30.")

MULT = ("Let me calculate 17 × 23.\n\n17 × 20 = 340\n17 × 3 = 51\n340 + 51 = 391\n\nSo 17 × 23 = 391.\n\n")
add("deg-inc-03", True, "incrementing_loop",
    fill(MULT,
         lambda i: f"Check {i + 1}: Let me double-check. 17 × 23 = 391. Let me verify this once more.\n",
         4600),
    "length", "What is 17 × 23?",
    "After a correct answer the model re-verifies the same product forever with an incrementing counter.")

QUIZ = ("World Capitals Quiz (10 questions)\n\n"
        "1. What is the capital of Japan?\n   Answer: Tokyo\n\n"
        "2. What is the capital of Brazil?\n   Answer: Brasília\n\n"
        "3. What is the capital of Kenya?\n   Answer: Nairobi\n\n"
        "4. What is the capital of Canada?\n   Answer: Ottawa\n\n")
add("deg-inc-04", True, "incrementing_loop",
    fill(QUIZ, lambda i: f"{i + 5}. What is the capital of France?\n   Answer: Paris\n\n", 5400),
    "length", "Create a 10-question quiz about world capitals with answers.",
    "Questions 5 onward are all the same France question, counting well past 10 until cut off.")

NOVEL = ("Here is a 12-chapter outline for your fantasy novel:\n\n"
         "Chapter 1: The Ember Child\nMira, a blacksmith's apprentice, discovers she can hold fire without being burned.\n\n"
         "Chapter 2: Ashes in the Market\nA royal inquisitor arrives in town searching for 'flame-touched' children.\n\n"
         "Chapter 3: Flight\nMira escapes with her mentor Doran into the Greywood.\n\n")
add("deg-inc-05", True, "incrementing_loop",
    fill(NOVEL,
         lambda i: (f"Chapter {i + 4}: The Journey Continues\n"
                    "Mira and Doran continue their journey through the forest and face new challenges.\n\n"),
         5200),
    "length", "Outline a fantasy novel in 12 chapters.",
    "Every chapter after the third has the same title and summary, running past chapter 12.")

# ---------------------------------------------------------------- token_loop
add("deg-tok-01", True, "token_loop",
    fill("The quick brown fox jumps over the", lambda i: " the", 1500),
    "length", "Complete the sentence: The quick brown fox",
    "The single token ' the' repeats hundreds of times.")

add("deg-tok-02", True, "token_loop",
    cut("Yes, that sounds like a great idea" + "!" * 3000, 2200, midword=False),
    "length", "I'm thinking of taking a weekend trip to the mountains. Good idea?",
    "An exclamation mark is repeated thousands of times until the token limit.")

add("deg-tok-03", True, "token_loop",
    cut("Pi to 20 decimal places is 3.14159265358979323846" + "0" * 2000, 1400, midword=False),
    "length", "What is pi to 20 decimal places?",
    "Correct digits are followed by an endless run of zeros.")

add("deg-tok-04", True, "token_loop",
    cut("北京是中华人民共和国的首都，也是一座有着三千多年历史的文化名城" + "的" * 1500, 900, midword=False),
    "length", "用一句话介绍北京。",
    "A single Chinese character repeats to the length limit.")

add("deg-tok-05", True, "token_loop",
    "Got it, thank you so much! " + "😊" * 600,
    "length", "Thanks for your help earlier, everything works now.",
    "An emoji is emitted hundreds of times in a row.")

add("deg-tok-06", True, "token_loop",
    "The answer is" + " is" * 48 + ".",
    "stop", "What is the boiling point of water at sea level in Celsius?",
    "The response collapses into a short loop of the word 'is' and never gives the answer.")

# ---------------------------------------------------------------- closing_tag_loop
CARD = ("Here's a simple, reusable card component:\n\n```html\n"
        "<div class=\"card\">\n"
        "  <img src=\"mountain.jpg\" alt=\"Mountain lake at sunrise\" class=\"card-img\">\n"
        "  <div class=\"card-body\">\n"
        "    <h3 class=\"card-title\">Lake Louise</h3>\n"
        "    <p class=\"card-text\">A glacier-fed lake in Banff National Park, famous for its turquoise water.</p>\n"
        "    <a href=\"/trips/lake-louise\" class=\"btn\">View trip</a>\n"
        "  </div>\n"
        "</div>\n")
add("deg-tag-01", True, "closing_tag_loop",
    fill(CARD, lambda i: "</div>\n", 4200),
    "length", "Create a simple HTML card component with an image, title, text and button.",
    "After a balanced card the model emits hundreds of unmatched </div> lines until cut off.")

add("deg-tag-02", True, "closing_tag_loop",
    fill("<p><span class=\"w\">Hello</span> <span class=\"w\">brave</span> <span class=\"w\">new</span> "
         "<span class=\"w\">world</span></p>", lambda i: "</span>", 2600),
    "length", "Wrap each word of 'Hello brave new world' in a span with class w, inside a paragraph.",
    "A run of unmatched </span> closing tags loops until the limit.")

RSS = ("```xml\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\">\n  <channel>\n"
       "    <title>Tiny Kitchen Blog</title>\n    <link>https://tinykitchen.example.com</link>\n"
       "    <description>Small-space cooking ideas</description>\n    <item>\n"
       "      <title>One-pan lemon orzo</title>\n      <link>https://tinykitchen.example.com/orzo</link>\n"
       "      <pubDate>Mon, 03 Jun 2024 09:00:00 GMT</pubDate>\n    </item>\n  </channel>\n</rss>\n")
add("deg-tag-03", True, "closing_tag_loop",
    fill(RSS, lambda i: "  </channel>\n</rss>\n", 3000),
    "length", "Write a minimal RSS 2.0 feed with one item for my cooking blog.",
    "The closing </channel></rss> pair repeats indefinitely after the document is complete.")

# ---------------------------------------------------------------- code_line_loop
PYTEST = ("```python\nimport unittest\nfrom calculator import add\n\n\nclass TestAdd(unittest.TestCase):\n"
          "    def test_positive(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
          "    def test_negative(self):\n        self.assertEqual(add(-1, -4), -5)\n\n"
          "    def test_zero(self):\n")
add("deg-code-01", True, "code_line_loop",
    fill(PYTEST, lambda i: "        self.assertEqual(add(2, 3), 5)\n", 6400),
    "length", "Write unit tests for an add(a, b) function using unittest.",
    "The same assertion line is repeated hundreds of times inside one test method.")

REACT = ("```jsx\nimport React from 'react';\nimport { useState } from 'react';\n")
add("deg-code-02", True, "code_line_loop",
    fill(REACT, lambda i: "import { useEffect } from 'react';\n", 3300),
    "length", "Write a React component that fetches and displays a list of users.",
    "The component never starts; the same import line loops until max tokens.")

SQL = ("```sql\nCREATE TABLE users (\n    id SERIAL PRIMARY KEY,\n    name VARCHAR(100) NOT NULL,\n"
       "    email VARCHAR(255) UNIQUE NOT NULL\n);\n\n")
add("deg-code-03", True, "code_line_loop",
    fill(SQL, lambda i: "INSERT INTO users (name, email) VALUES ('John Doe', 'john.doe@example.com');\n", 5800),
    "length", "Create a users table and insert five sample rows.",
    "An identical INSERT statement (violating the UNIQUE constraint) repeats until the limit.")

BASH = ("```bash\n#!/usr/bin/env bash\nset -euo pipefail\n\n# Update packages and install nginx\n"
        "sudo apt-get update\n")
add("deg-code-04", True, "code_line_loop",
    fill(BASH, lambda i: "sudo apt-get install -y nginx\n", 2900),
    "length", "Write a bash script that installs nginx and enables it on boot.",
    "The install command line is repeated over and over; the script never finishes.")

# ---------------------------------------------------------------- list_item_repeat
SLEEP = ("Here are some tips for better sleep:\n\n"
         "- Keep a consistent sleep schedule, even on weekends.\n"
         "- Keep your bedroom cool, dark, and quiet.\n"
         "- Limit caffeine after 2 p.m.\n"
         "- Get some sunlight early in the day.\n")
add("deg-list-01", True, "list_item_repeat",
    fill(SLEEP, lambda i: "- Avoid screens for an hour before bed.\n", 3600),
    "length", "Give me 10 tips for better sleep.",
    "One bullet is repeated verbatim dozens of times instead of listing distinct tips.")

FRUITS = ["Apple", "Banana", "Orange", "Mango"]
add("deg-list-02", True, "list_item_repeat",
    fill("Here are some common fruits:\n\n", lambda i: f"- {FRUITS[i % 4]}\n", 2400),
    "length", "Name some common fruits.",
    "The same four fruits cycle verbatim until the length limit.")

NAMES = ["Olivia", "Emma", "Ava", "Sophia", "Isabella", "Mia"]
add("deg-list-03", True, "list_item_repeat",
    fill("Here are 20 popular baby girl names:\n\n", lambda i: f"{i + 1}. {NAMES[i % 6]}\n", 2300),
    "length", "Give me 20 popular baby girl names.",
    "Six names cycle repeatedly and the numbering runs far past 20.")

PACK = ("Beach trip packing checklist:\n\n- [ ] Swimsuit\n- [ ] Towel\n- [ ] Flip-flops\n- [ ] Sunglasses\n")
add("deg-list-04", True, "list_item_repeat",
    fill(PACK, lambda i: "- [ ] Sunscreen (SPF 50)\n", 2700),
    "length", "Make me a packing checklist for a weekend beach trip.",
    "The sunscreen checklist item is repeated dozens of times verbatim.")

# ---------------------------------------------------------------- invented_user_turn
add("deg-user-01", True, "invented_user_turn",
    "The capital of Australia is Canberra. Many people assume it's Sydney or Melbourne, but Canberra was "
    "purpose-built as a compromise between those two cities and officially became the capital in 1913.\n\n"
    "User: What about New Zealand?\n\n"
    "Assistant: The capital of New Zealand is Wellington, located at the southern tip of the North Island.\n\n"
    "User: And Canada?\n\n"
    "Assistant: The capital of Canada is Ottawa, in the province of Ontario.\n\n"
    "User: Thanks! What's the largest city in Canada?\n\n"
    "Assistant: The largest city in Canada is Toronto.",
    "stop", "What's the capital of Australia?",
    "After answering, the model invents follow-up 'User:' turns and answers them itself.")

add("deg-user-02", True, "invented_user_turn",
    "Fluffy Pancakes (makes about 8)\n\nIngredients:\n- 1 1/2 cups all-purpose flour\n- 3 1/2 tsp baking powder\n"
    "- 1 tbsp sugar\n- 1/4 tsp salt\n- 1 1/4 cups milk\n- 1 egg\n- 3 tbsp melted butter\n\n"
    "Instructions:\n1. Whisk the flour, baking powder, sugar, and salt in a large bowl.\n"
    "2. Make a well in the center and pour in the milk, egg, and melted butter; mix until just combined.\n"
    "3. Heat a lightly oiled griddle over medium-high heat.\n"
    "4. Pour about 1/4 cup of batter per pancake and cook until bubbles form, then flip and brown the other side.\n\n"
    "User: Thanks! Can you make it vegan?\n\n"
    "Assistant: Of course! Replace the milk with oat milk and the egg with a flax egg (1 tablespoon ground "
    "flaxseed mixed with 3 tablespoons water). Use vegetable oil instead of butter.\n\n"
    "User: Perfect. How many calories per pancake?\n\n"
    "Assistant: Each pancake has roughly 90 to 110 calories, depending on size and toppings.",
    "stop", "Give me a simple pancake recipe.",
    "A good recipe is followed by fabricated user follow-ups and self-answers.")

add("deg-user-03", True, "invented_user_turn",
    "To undo the last commit but keep your changes staged, run:\n\n```bash\ngit reset --soft HEAD~1\n```\n\n"
    "If you want to discard the changes completely, use `git reset --hard HEAD~1` (be careful: this deletes "
    "uncommitted work).\n\nUSER: What if I already pushed it?\nASSISTANT: If the commit is already on the "
    "remote, it's safer to create a new commit that reverses it:\n\n```bash\ngit revert HEAD\ngit push\n```\n\n"
    "USER: ok thanks\nASSISTANT: You're welcome! Let me know if you need anything else.",
    "stop", "How do I undo my last git commit?",
    "The model continues with invented 'USER:'/'ASSISTANT:' turns the user never wrote.")

HAIKUS = [
    "Salt wind on the dunes\nwaves fold the light into foam\nthe tide keeps its time",
    "Grey gulls wheel and cry\nover nets heavy with kelp\nmorning fog lifting",
    "Moonlight on the swell\na single boat rocking slow\nthe sea breathes and sleeps",
]
HK_START = HAIKUS[0] + "\n\n"
add("deg-user-04", True, "invented_user_turn",
    fill(HK_START,
         lambda i: "User: Another one please.\n\nAssistant: " + HAIKUS[(i % 2) + 1] + "\n\n",
         2300),
    "length", "Write a haiku about the ocean.",
    "After one haiku the model fabricates 'User: Another one please.' turns in a loop until max tokens.")

# ---------------------------------------------------------------- invented_template_turn
add("deg-tmpl-01", True, "invented_template_turn",
    "A metaphor compares two things directly without using \"like\" or \"as\". For example: \"Time is a thief.\" "
    "This suggests that time quietly steals moments from our lives.<|im_end|>\n<|im_start|>user\nCan you give me "
    "an example of a simile too?<|im_end|>\n<|im_start|>assistant\nSure! A simile uses \"like\" or \"as\": "
    "\"Her smile was as bright as the sun.\"<|im_end|>\n<|im_start|>user\nThanks, that helps!",
    "stop", "Give me an example of a metaphor.",
    "The model emits ChatML end/start tokens and writes a fake next user turn.")

add("deg-tmpl-02", True, "invented_template_turn",
    "Some great names for a golden retriever: Sunny, Maple, Biscuit, Honey, Cooper, or Goldie."
    "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat about a black cat?"
    "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nFor a black cat, you might like Shadow, "
    "Onyx, Salem, Panther, or Midnight.",
    "stop", "What's a good name for a golden retriever puppy?",
    "Llama-3 header tokens leak and a fabricated user question follows the answer.")

add("deg-tmpl-03", True, "invented_template_turn",
    "100°F is about 37.8°C. The formula is C = (F - 32) × 5/9, so (100 - 32) × 5/9 = 37.78.</s><s>[INST] And 0 "
    "Celsius to Fahrenheit? [/INST] 0°C is 32°F. </s><s>[INST] What about -40? [/INST] -40 is the same on both "
    "scales: -40°F = -40°C.",
    "stop", "Convert 100 Fahrenheit to Celsius.",
    "Llama-2 [INST] markers show the model inventing new user instructions after its answer.")

# ---------------------------------------------------------------- invented_human_turn
add("deg-human-01", True, "invented_human_turn",
    "An API (Application Programming Interface) is a set of rules that lets one piece of software talk to "
    "another. Instead of knowing how a service works internally, a program sends a request in an agreed format "
    "and gets back a response, much like ordering from a menu without needing to know how the kitchen works.\n\n"
    "Human: Can you give me an example of a popular API?\n\n"
    "Assistant: Sure! The Google Maps API lets developers embed maps, calculate routes, and look up places in "
    "their own apps.\n\nHuman: Is it free?\n\nAssistant: It has a free monthly credit, after which usage is billed.",
    "stop", "Explain what an API is in one paragraph.",
    "The one-paragraph answer is followed by invented 'Human:' turns and self-replies.")

add("deg-human-02", True, "invented_human_turn",
    fill("You're very welcome! I'm glad the script worked for you. If you run into any other issues, feel free "
         "to ask.\n",
         lambda i: "### Human: Thank you!\n### Assistant: You're welcome! Let me know if there's anything else I can help with.\n",
         2600),
    "length", "Thank you, the script works perfectly now!",
    "The model fabricates '### Human: Thank you!' turns and loops on them until the limit.")

add("deg-human-03", True, "invented_human_turn",
    "The Great Wall of China is not visible to the naked eye from low Earth orbit under normal conditions; it is "
    "very long but only a few meters wide and similar in color to the surrounding terrain. Astronauts have "
    "confirmed this, although city lights and large airports are easy to spot.\n\n"
    "### Instruction:\nWrite a short poem about the Great Wall.\n\n### Response:\nStone dragon sleeping\n"
    "across a thousand mountains,\nwatching empty skies.",
    "stop", "Is the Great Wall of China visible from space?",
    "An Alpaca-style '### Instruction:' block shows the model writing a new user instruction itself.")

# ---------------------------------------------------------------- good_then_loop
TCP = ("TCP and UDP are both transport-layer protocols, but they make different trade-offs.\n\n"
       "**TCP (Transmission Control Protocol)**\n"
       "- Connection-oriented: a three-way handshake (SYN, SYN-ACK, ACK) establishes a session first.\n"
       "- Reliable: lost packets are retransmitted, and data arrives in order.\n"
       "- Has flow control and congestion control.\n"
       "- Used for web pages (HTTP/1.1 and HTTP/2), email, file transfer, and SSH.\n\n"
       "**UDP (User Datagram Protocol)**\n"
       "- Connectionless: packets (datagrams) are sent without a handshake.\n"
       "- No guarantee of delivery or ordering; the application must handle loss if it cares.\n"
       "- Lower overhead and latency.\n"
       "- Used for DNS lookups, video calls, online games, and QUIC (HTTP/3).\n\n"
       "In short, choose TCP when correctness matters more than speed, and UDP when low latency matters more "
       "than perfect delivery. ")
add("deg-mix-01", True, "good_then_loop",
    fill(TCP, lambda i: "UDP is faster than TCP because it does not need to establish a connection. ", 5200),
    "length", "What's the difference between TCP and UDP?",
    "A solid comparison collapses into one sentence repeated until max tokens.")

CSVPY = ("You can read a CSV file with Python's built-in `csv` module:\n\n```python\nimport csv\n\n"
         "with open('data.csv', newline='', encoding='utf-8') as f:\n    reader = csv.DictReader(f)\n"
         "    for row in reader:\n        print(row['name'], row['email'])\n```\n\n"
         "`DictReader` uses the first line as column names, so each `row` is a dictionary. If your file uses "
         "semicolons, pass `delimiter=';'`.\n\nIf you prefer pandas:\n\n```python\nimport pandas as pd\n\n"
         "df = pd.read_csv('data.csv')\nprint(df.head())\n")
add("deg-mix-02", True, "good_then_loop",
    fill(CSVPY, lambda i: "print(df.head())\n", 3400),
    "length", "How do I read a CSV file in Python?",
    "Correct explanation and code, then the last code line loops until the limit.")

REMOTE = ("Remote work has reshaped how many people think about their jobs. For employees, the most obvious "
          "benefit is the elimination of the daily commute, which can return an hour or more each day and reduce "
          "stress and transport costs. Many workers also report greater control over their schedules, making it "
          "easier to care for children or elderly relatives.\n\n"
          "For employers, remote work widens the talent pool beyond a single city and can lower office costs. "
          "However, it also introduces challenges. Collaboration can suffer when spontaneous hallway "
          "conversations disappear, and new employees may find it harder to learn the unwritten rules of a "
          "company. Some workers struggle with isolation or find that the boundary between work and home "
          "becomes blurred, leading to longer hours rather than shorter ones.\n\n"
          "Hybrid models try to capture the best of both worlds by bringing teams together for planning and "
          "social connection while leaving focused work to be done at home.\n\n")
add("deg-mix-03", True, "good_then_loop",
    fill(REMOTE, lambda i: "In conclusion, remote work has both advantages and disadvantages. ", 4800),
    "length", "Write a short essay on the pros and cons of remote work.",
    "A coherent essay ends in a concluding sentence that repeats endlessly.")

add("deg-mix-04", True, "good_then_loop",
    fill("Here is the translation:\n\n\"Querido equipo: Gracias por el enorme esfuerzo de este trimestre. "
         "Gracias a vuestro trabajo hemos superado nuestros objetivos de ventas y hemos abierto dos nuevas "
         "oficinas. ¡Os lo agradezco de corazón!\"\n\n",
         lambda i: "¡Gracias! ", 1900),
    "length", "Translate to Spanish (Spain): 'Dear team, thank you for your enormous effort this quarter. "
              "Thanks to your work we exceeded our sales targets and opened two new offices. Thank you from the "
              "bottom of my heart!'",
    "A correct translation followed by '¡Gracias!' looping to the limit.")

add("deg-mix-05", True, "good_then_loop",
    fill("Solve 2x + 3 = 13.\n\n1. Subtract 3 from both sides: 2x = 10\n2. Divide both sides by 2: x = 5\n\n"
         "Check: 2(5) + 3 = 10 + 3 = 13 ✓\n\n",
         lambda i: "Therefore, x = 5.\n", 2100),
    "length", "Solve 2x + 3 = 13 and show your steps.",
    "A correct solution then the final line 'Therefore, x = 5.' loops until max tokens.")

# ---------------------------------------------------------------- near_identical_loop
def important_variant(i):
    r = random.Random(1000 + i)
    opener = r.choice(["It is important to note that", "It is also important to note that",
                       "It is important to remember that", "Again, it is important to note that"])
    poss = r.choice(["the", "your"])
    tail = r.choice(["situation", "specific situation", "particular situation"])
    return f"{opener} the results may vary depending on {poss} {tail}. "


add("deg-near-01", True, "near_identical_loop",
    fill("Intermittent fasting can help some people lose weight, mainly because it makes it easier to eat "
         "fewer calories overall. Studies comparing it to ordinary calorie restriction generally find similar "
         "results. ", important_variant, 5000),
    "length", "Does intermittent fasting actually work for weight loss?",
    "The same caveat sentence repeats with only tiny word swaps until max tokens.")


def very_variant(i):
    return "This is a " + "very " * (i + 1) + "important point. "


add("deg-near-02", True, "near_identical_loop",
    fill("Always back up your data before upgrading your operating system. ", very_variant, 3800),
    "length", "Any advice before I upgrade to the new OS version?",
    "A sentence repeats with an ever-growing run of 'very', a classic degeneration pattern.")


def helps_variant(i):
    r = random.Random(77 + i)
    a = r.choice(["I hope this helps!", "Hope this helps!", "I hope this helps! 😊", "I hope that helps!"])
    b = r.choice(["Let me know if you have any other questions.", "Let me know if you have any more questions.",
                  "Feel free to ask if you have any other questions.", "Let me know if you need anything else."])
    return f"{a} {b}\n\n"


add("deg-near-03", True, "near_identical_loop",
    fill("To change your default browser on Windows 11, open Settings > Apps > Default apps, select the browser "
         "you want, and click \"Set default\" at the top of the page.\n\n", helps_variant, 3100),
    "length", "How do I change my default browser on Windows 11?",
    "Near-identical sign-off lines ('Hope this helps! Let me know...') repeat until the limit.")

# ---------------------------------------------------------------- runaway_ramble
CONCL = ["In conclusion, learning a new language takes time, patience, and consistent practice. ",
         "Ultimately, the most important thing is to stay motivated and keep practicing every day. ",
         "To summarize, consistency is the key to success when learning a new language. ",
         "Remember, everyone learns at their own pace, so don't be too hard on yourself. "]
add("deg-ramble-01", True, "runaway_ramble",
    fill("Learning a new language as an adult is very achievable. Start with the 1,000 most common words, use "
         "spaced-repetition flashcards, and listen to native speakers every day, even if only for 15 minutes. "
         "Speaking early, even badly, is more valuable than waiting until you feel ready.\n\n",
         lambda i: CONCL[i % 4], 6200),
    "length", "What's the best way to learn a new language as an adult?",
    "A cycle of four closing platitudes repeats verbatim until the model hits max tokens.")


def wait_variant(i):
    r = random.Random(300 + i)
    w = r.choice(["Wait,", "Hmm, wait.", "Actually, wait.", "But wait,"])
    lm = "Let" if w.endswith(".") else "let"
    return (f"{w} {lm} me reconsider. The train travels at 60 miles per hour for 2 hours, so the distance is "
            f"60 × 2 = 120 miles. So the answer is 120 miles. ")


add("deg-ramble-02", True, "runaway_ramble",
    fill("Let me think about this step by step.\n\nThe train leaves at 3 PM and arrives at 5 PM, so it travels "
         "for 2 hours. Its speed is 60 miles per hour. Distance = speed × time = 60 × 2 = 120 miles.\n\n",
         wait_variant, 14200),
    "length", "A train leaves at 3 PM and arrives at 5 PM, travelling at 60 mph. How far does it go?",
    "The model reaches the answer and then keeps 'reconsidering' with the identical computation until cut off.")

GUITAR = ["The key is to practice a little bit every day. ",
          "Even 15 minutes a day is better than two hours once a week. ",
          "Your fingers will hurt at first, but that is normal. ",
          "Over time, you will build calluses and it will get easier. "]
add("deg-ramble-03", True, "runaway_ramble",
    fill("Learning guitar as a beginner can feel overwhelming, but it is very doable. Start by learning a few "
         "open chords such as G, C, D, and E minor, because they appear in thousands of songs. ",
         lambda i: GUITAR[i % 4], 4400),
    "length", "I'm 35 and want to learn guitar. Where do I start?",
    "The same four sentences cycle over and over with no new information until max tokens.")

STORY_DAY = ("The next morning, Lily woke up and went to the window. The sun was shining over the hills. She "
             "smiled and went downstairs for breakfast with her grandmother. After breakfast, she went back to "
             "her room, lay down on the bed, and fell asleep.\n\n")
add("deg-ramble-04", True, "runaway_ramble",
    fill("Once upon a time, in a small village at the edge of a great forest, there lived a girl named Lily "
         "who was spending the summer with her grandmother. On her first night, she heard a strange humming "
         "coming from the woods, but her grandmother told her it was only the wind.\n\n",
         lambda i: STORY_DAY, 5600),
    "length", "Write a short bedtime story about a girl who discovers something magical in the forest.",
    "The story gets stuck re-narrating the identical morning paragraph until the limit.")

# ---------------------------------------------------------------- multilingual_loop
add("deg-ml-01", True, "multilingual_loop",
    cut("长城是中国古代最伟大的军事防御工程之一，总长度超过两万公里。它始建于春秋战国时期，"
        "秦始皇统一中国后将各段城墙连接起来。" + "长城是中华民族的象征，也是世界文化遗产之一。" * 80,
        1300, midword=False),
    "length", "请介绍一下长城。",
    "After a reasonable start one Chinese sentence repeats verbatim until the limit.")

add("deg-ml-02", True, "multilingual_loop",
    fill("Чтобы быстро выучить английский, важно заниматься регулярно. Учите по 10–15 новых слов в день, "
         "смотрите сериалы с субтитрами и старайтесь как можно раньше начать говорить. ",
         lambda i: "Главное — заниматься каждый день и не сдаваться. ", 3000),
    "length", "Как быстро выучить английский язык?",
    "A Russian motivational sentence repeats verbatim until max tokens.")

add("deg-ml-03", True, "multilingual_loop",
    fill("عاصمة مصر هي القاهرة، وهي أكبر مدينة في العالم العربي وتقع على ضفاف نهر النيل. ",
         lambda i: "القاهرة هي عاصمة مصر. ", 1800),
    "length", "ما هي عاصمة مصر؟",
    "A short Arabic sentence repeats many times after a correct answer.")

# ---------------------------------------------------------------- structured_data_loop
JSON_START = ("```json\n[\n  {\"id\": 1, \"name\": \"Wireless Mouse\", \"price\": 24.99, \"in_stock\": true},\n"
              "  {\"id\": 2, \"name\": \"USB-C Hub\", \"price\": 39.5, \"in_stock\": false},\n")
add("deg-data-01", True, "structured_data_loop",
    fill(JSON_START,
         lambda i: "  {\"id\": 3, \"name\": \"Mechanical Keyboard\", \"price\": 89.0, \"in_stock\": true},\n",
         4300),
    "length", "Give me a JSON array of 5 sample products with id, name, price and in_stock.",
    "The same JSON object (same id) repeats identically until the output is cut off.")

TBL = ("| Country | Capital | Population (M) |\n|---|---|---|\n| Germany | Berlin | 84.5 |\n"
       "| France | Paris | 68.2 |\n| Italy | Rome | 58.9 |\n")
add("deg-data-02", True, "structured_data_loop",
    fill(TBL, lambda i: "| Spain | Madrid | 48.6 |\n", 2500),
    "length", "Make a markdown table of the 10 most populous EU countries with capital and population.",
    "The Spain row is repeated verbatim dozens of times instead of continuing the table.")

CSVL = "date,store,units_sold,revenue\n2024-01-01,Downtown,132,2904.00\n2024-01-02,Downtown,118,2596.00\n"
add("deg-data-03", True, "structured_data_loop",
    fill(CSVL, lambda i: "2024-01-03,Downtown,125,2750.00\n", 2800),
    "length", "Generate sample daily sales CSV data for January 2024 for one store.",
    "The date stops advancing and one CSV row repeats identically until the limit.")

# ---------------------------------------------------------------- math_loop
add("deg-math-01", True, "math_loop",
    fill("Let's expand 2(x + 3) step by step.\n\n2(x + 3) = 2·x + 2·3 = 2x + 6", lambda i: " = 2x + 6", 1700),
    "length", "Expand 2(x + 3).",
    "The equality chain '= 2x + 6' repeats forever instead of ending.")

IBP = ("We want ∫ e^x sin x dx. Use integration by parts.\n\n")
IBP_LOOP = ("Let u = e^x and dv = sin x dx. Then du = e^x dx and v = -cos x.\n"
            "So ∫ e^x sin x dx = -e^x cos x + ∫ e^x cos x dx.\n"
            "Now apply integration by parts to ∫ e^x cos x dx.\n\n")
add("deg-math-02", True, "math_loop",
    fill(IBP, lambda i: IBP_LOOP, 4100),
    "length", "Compute the integral of e^x sin(x) dx.",
    "The model re-applies the identical integration-by-parts step in a loop and never solves for the integral.")

# ---- a few more degenerate items for length/variety ----
add("deg-sent-06", True, "sentence_loop",
    "Sure! " + "I'm sorry, but I can't help with that. " * 12,
    "stop", "Can you help me write a birthday message for my sister?",
    "A refusal sentence (itself inappropriate) is repeated twelve times verbatim.")

add("deg-tok-07", True, "token_loop",
    "Autumn leaves drifting\nthe old path hidden in gold\nfootsteps soft and slow" + "\n" * 2500,
    "length", "Write a haiku about autumn.",
    "After the haiku the model emits thousands of newlines until it hits max tokens.")

add("deg-code-05", True, "code_line_loop",
    fill("```css\n.button {\n  display: inline-block;\n  padding: 8px 16px;\n  background: #2563eb;\n"
         "  color: #fff;\n", lambda i: "  border-radius: 4px;\n", 2600),
    "length", "Write CSS for a blue rounded button with hover effect.",
    "The same CSS declaration is emitted over and over inside one rule.")

add("deg-mix-06", True, "good_then_loop",
    fill("Hi Sarah,\n\nThanks for sending over the Q3 report. I went through it this morning and the revenue "
         "breakdown by region is really clear. Two small things: the chart on page 4 seems to be missing the "
         "APAC numbers, and the totals on page 7 don't match the summary table. Could you take a look before "
         "we send it to the board on Thursday?\n\n",
         lambda i: "Best regards,\nJohn\n\n", 1800),
    "length", "Write a short email to my colleague Sarah giving feedback on her Q3 report: a missing APAC chart "
              "and mismatched totals, due Thursday.",
    "A good email is followed by the signature block repeated until max tokens.")

# ============================================================================
# HEALTHY ITEMS (label = False)
# ============================================================================

# ---------------------------------------------------------------- short_answer
SHORTS = [
    ("ok-short-01", "What's the capital of Australia?", "The capital of Australia is Canberra."),
    ("ok-short-02", "How many bones are in the adult human body?", "An adult human body has 206 bones."),
    ("ok-short-03", "Is 97 a prime number?",
     "Yes, 97 is prime — it isn't divisible by 2, 3, 5, or 7, and those are the only primes up to √97."),
    ("ok-short-04", "What's 15% of 80?", "15% of 80 is 12."),
    ("ok-short-05", "Give me one synonym for 'happy'.", "Joyful."),
    ("ok-short-06", "ok thanks!", "You're welcome! Let me know if there's anything else I can help with."),
    ("ok-short-07", "Who wrote 'Pride and Prejudice'?",
     "*Pride and Prejudice* was written by Jane Austen and first published in 1813."),
]
for sid, p, t in SHORTS:
    add(sid, False, "short_answer", t, "stop", p, "A short, correct, complete answer with no repetition.")

# ---------------------------------------------------------------- nested_markup
HTML_PAGE = """Here's a complete page layout with a header, a nested navigation menu, a main section and a footer:

```html
<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="UTF-8">
  <meta name="viewport" content="width=device-width, initial-scale=1.0">
  <title>Greenleaf Garden Supply</title>
  <link rel="stylesheet" href="styles.css">
</head>
<body>
  <header class="site-header">
    <div class="container">
      <a href="/" class="logo">Greenleaf</a>
      <nav>
        <ul class="menu">
          <li><a href="/">Home</a></li>
          <li class="has-submenu">
            <a href="/shop">Shop</a>
            <ul class="submenu">
              <li><a href="/shop/seeds">Seeds</a></li>
              <li class="has-submenu">
                <a href="/shop/tools">Tools</a>
                <ul class="submenu">
                  <li><a href="/shop/tools/hand">Hand tools</a></li>
                  <li><a href="/shop/tools/power">Power tools</a></li>
                </ul>
              </li>
              <li><a href="/shop/soil">Soil &amp; compost</a></li>
            </ul>
          </li>
          <li><a href="/blog">Blog</a></li>
          <li><a href="/contact">Contact</a></li>
        </ul>
      </nav>
    </div>
  </header>

  <main class="container">
    <section class="hero">
      <h1>Grow something great this spring</h1>
      <p>Heirloom seeds, durable tools and advice from people who actually garden.</p>
      <a href="/shop" class="btn btn-primary">Browse the shop</a>
    </section>

    <section class="features">
      <article class="feature">
        <h2>Organic seeds</h2>
        <p>Over 300 varieties, all open-pollinated and untreated.</p>
      </article>
      <article class="feature">
        <h2>Free delivery</h2>
        <p>On all orders over $50 within the continental US.</p>
      </article>
      <article class="feature">
        <h2>Expert help</h2>
        <p>Chat with our horticulturists seven days a week.</p>
      </article>
    </section>
  </main>

  <footer class="site-footer">
    <div class="container">
      <p>&copy; 2024 Greenleaf Garden Supply</p>
    </div>
  </footer>
</body>
</html>
```

The nested `<ul class="submenu">` elements create a two-level dropdown; you can show them on hover with `.has-submenu:hover > .submenu { display: block; }`."""
add("ok-markup-01", False, "nested_markup", HTML_PAGE, "stop",
    "Write an HTML page for a garden supply store with a nested dropdown menu, hero section and footer.",
    "Deeply nested but fully balanced HTML that the user asked for, followed by a short explanation.")

depth = 14
lines = ["Here's the markup with 14 nested `div`s. Each level has a `level-N` class so you can test your "
         "depth-based selectors:\n", "```html"]
for d in range(1, depth + 1):
    lines.append("  " * (d - 1) + f"<div class=\"level level-{d}\" data-depth=\"{d}\">")
lines.append("  " * depth + "<p>Innermost content (depth 14)</p>")
for d in range(depth, 0, -1):
    lines.append("  " * (d - 1) + "</div>")
lines.append("```\n\nEvery opening tag has a matching closing tag, so the document is well-formed. A selector "
             "like `.level-14 > p` will target only the innermost paragraph.")
add("ok-markup-02", False, "nested_markup", "\n".join(lines), "stop",
    "Generate HTML with 14 nested divs (each with a level class) so I can test my CSS depth selectors.",
    "A run of 14 closing </div> tags is correct here: it balances exactly 14 requested nested divs.")

DEPS = [("org.springframework.boot", "spring-boot-starter-web", None),
        ("org.springframework.boot", "spring-boot-starter-data-jpa", None),
        ("org.postgresql", "postgresql", "runtime"),
        ("org.projectlombok", "lombok", "provided"),
        ("org.springframework.boot", "spring-boot-starter-validation", None),
        ("org.springframework.boot", "spring-boot-starter-test", "test")]
pom = ["Here's a `pom.xml` for a Spring Boot 3 REST service with PostgreSQL:\n", "```xml",
       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
       "<project xmlns=\"http://maven.apache.org/POM/4.0.0\"",
       "         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"",
       "         xsi:schemaLocation=\"http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd\">",
       "  <modelVersion>4.0.0</modelVersion>", "  <parent>",
       "    <groupId>org.springframework.boot</groupId>",
       "    <artifactId>spring-boot-starter-parent</artifactId>",
       "    <version>3.2.5</version>", "    <relativePath/>", "  </parent>", "",
       "  <groupId>com.example</groupId>", "  <artifactId>inventory-service</artifactId>",
       "  <version>0.0.1-SNAPSHOT</version>", "", "  <properties>", "    <java.version>17</java.version>",
       "  </properties>", "", "  <dependencies>"]
for g, a, s in DEPS:
    pom += ["    <dependency>", f"      <groupId>{g}</groupId>", f"      <artifactId>{a}</artifactId>"]
    if s:
        pom.append(f"      <scope>{s}</scope>")
    pom.append("    </dependency>")
pom += ["  </dependencies>", "", "  <build>", "    <plugins>", "      <plugin>",
        "        <groupId>org.springframework.boot</groupId>",
        "        <artifactId>spring-boot-maven-plugin</artifactId>", "      </plugin>", "    </plugins>",
        "  </build>", "</project>", "```", "",
        "Run `./mvnw spring-boot:run` to start the service once you've configured `spring.datasource.url` in "
        "`application.properties`."]
add("ok-markup-03", False, "nested_markup", "\n".join(pom), "stop",
    "Write a Maven pom.xml for a Spring Boot 3 REST API using JPA and PostgreSQL, with Lombok and validation.",
    "Repeated <dependency> blocks are structurally similar but each names a different artifact; XML is balanced.")

svg = ["```svg", "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 200 200\" width=\"200\" height=\"200\">",
       "  <g id=\"target\" transform=\"translate(100 100)\">"]
colors = ["#b91c1c", "#f8fafc", "#b91c1c", "#f8fafc", "#b91c1c"]
for k, r in enumerate([90, 72, 54, 36, 18]):
    svg.append(f"    <g class=\"ring ring-{k + 1}\">")
    svg.append(f"      <circle r=\"{r}\" fill=\"{colors[k]}\" stroke=\"#1f2937\" stroke-width=\"1\"/>")
    svg.append("    </g>")
svg += ["    <g id=\"crosshair\" stroke=\"#1f2937\" stroke-width=\"0.8\">",
        "      <line x1=\"-95\" y1=\"0\" x2=\"95\" y2=\"0\"/>", "      <line x1=\"0\" y1=\"-95\" x2=\"0\" y2=\"95\"/>",
        "    </g>", "  </g>", "</svg>", "```", "",
        "Each ring is its own `<g>` group, so you can animate or recolor rings individually with CSS."]
add("ok-markup-04", False, "nested_markup", "Here's an SVG archery target with five rings:\n\n" + "\n".join(svg),
    "stop", "Draw an archery target as an SVG with 5 alternating red and white rings and a crosshair.",
    "Similar <g>/<circle> elements with different radii and colors; balanced and purposeful.")

JSX = """```jsx
export default function PricingTable({ plans }) {
  return (
    <section className="pricing">
      <div className="pricing-grid">
        {plans.map((plan) => (
          <div key={plan.id} className={`plan ${plan.featured ? 'plan--featured' : ''}`}>
            <div className="plan-header">
              <h3>{plan.name}</h3>
              <p className="price">
                <span className="amount">${plan.price}</span>
                <span className="period">/month</span>
              </p>
            </div>
            <ul className="plan-features">
              {plan.features.map((f) => (
                <li key={f}>
                  <span className="check" aria-hidden="true">✓</span>
                  <span>{f}</span>
                </li>
              ))}
            </ul>
            <div className="plan-footer">
              <button type="button" className="btn">Choose {plan.name}</button>
            </div>
          </div>
        ))}
      </div>
    </section>
  );
}
```

Pass an array like `[{ id: 'pro', name: 'Pro', price: 12, featured: true, features: ['Unlimited projects', 'Priority support'] }]`."""
add("ok-markup-05", False, "nested_markup", JSX, "stop",
    "Write a React pricing table component that renders a list of plans with features.",
    "Nested JSX with several consecutive closing tags, all balanced and meaningful.")

# ---------------------------------------------------------------- csv_data
rng = random.Random(42)
rows = ["month,region,units,revenue_usd"]
for y in (2023,):
    for m in range(1, 13):
        for reg in ("North", "South"):
            u = rng.randint(800, 1600)
            rows.append(f"{y}-{m:02d},{reg},{u},{u * 19.5:.2f}")
add("ok-csv-01", False, "csv_data",
    "Here's sample monthly sales data for 2023 (price fixed at $19.50 per unit):\n\n```csv\n" + "\n".join(rows) +
    "\n```", "stop",
    "Generate sample monthly sales CSV data for 2023 for two regions, North and South, with units and revenue.",
    "24 CSV rows with the same shape but distinct months, regions and values, exactly as requested.")

rng = random.Random(9)
rows = ["timestamp,sensor_id,temperature_c,humidity_pct"]
t, h = 21.0, 45.0
for k in range(60):
    t += rng.uniform(-0.3, 0.35)
    h += rng.uniform(-0.8, 0.7)
    rows.append(f"2024-03-14T08:{k:02d}:00Z,greenhouse-2,{t:.2f},{h:.1f}")
add("ok-csv-02", False, "csv_data", "```csv\n" + "\n".join(rows) + "\n```\n\nThe readings drift slowly, which "
    "is typical for a greenhouse sensor sampled once per minute.", "stop",
    "Give me one hour of fake per-minute temperature/humidity readings for a greenhouse sensor as CSV.",
    "60 timestamped rows with slowly varying values; similar lines are expected for sensor data.")

FIRST = ["Aisha", "Ben", "Carlos", "Dana", "Elif", "Farah", "George", "Hana", "Ivan", "Jade", "Kofi", "Lena",
         "Mateo", "Nia", "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tariq", "Uma", "Victor", "Wen", "Ximena",
         "Yusuf", "Zoe", "Arjun", "Bea", "Chen", "Diego"]
LAST = ["Khan", "Turner", "Ruiz", "Levy", "Demir", "Haddad", "Clarke", "Sato", "Petrov", "Nguyen", "Mensah",
        "Fischer", "Gómez", "Okafor", "Aziz", "Sharma", "Walsh", "Moreno", "Virtanen", "Ali", "Patel", "Costa",
        "Li", "Herrera", "Yilmaz", "Martin", "Reddy", "Novak", "Wang", "Silva"]
rng = random.Random(3)
rows = ["student_id,first_name,last_name,math,physics,english"]
for k in range(30):
    rows.append(f"S{1001 + k},{FIRST[k]},{LAST[k]},{rng.randint(48, 100)},{rng.randint(45, 100)},"
                f"{rng.randint(50, 100)}")
add("ok-csv-03", False, "csv_data", "Here is a CSV with 30 fictional students and their exam scores:\n\n" +
    "\n".join(rows), "stop",
    "Create a CSV of 30 fictional students with ID, first name, last name and scores in math, physics, English.",
    "30 distinct student records; repetitive structure is inherent to CSV.")

# ---------------------------------------------------------------- markdown_table
ELEM = [("H", "Hydrogen", 1.008), ("He", "Helium", 4.0026), ("Li", "Lithium", 6.94), ("Be", "Beryllium", 9.0122),
        ("B", "Boron", 10.81), ("C", "Carbon", 12.011), ("N", "Nitrogen", 14.007), ("O", "Oxygen", 15.999),
        ("F", "Fluorine", 18.998), ("Ne", "Neon", 20.180), ("Na", "Sodium", 22.990), ("Mg", "Magnesium", 24.305),
        ("Al", "Aluminium", 26.982), ("Si", "Silicon", 28.085), ("P", "Phosphorus", 30.974),
        ("S", "Sulfur", 32.06), ("Cl", "Chlorine", 35.45), ("Ar", "Argon", 39.948), ("K", "Potassium", 39.098),
        ("Ca", "Calcium", 40.078)]
tb = ["| Z | Symbol | Name | Atomic mass (u) |", "|---:|:---:|---|---:|"]
for z, (s, n, m) in enumerate(ELEM, 1):
    tb.append(f"| {z} | {s} | {n} | {m} |")
add("ok-table-01", False, "markdown_table", "\n".join(tb) +
    "\n\nNote that argon (39.948) is heavier than potassium (39.098) even though it comes first — the table is "
    "ordered by atomic number, not mass.", "stop",
    "Make a markdown table of the first 20 elements with atomic number, symbol, name and atomic mass.",
    "20 distinct element rows in a requested table.")

PLANETS = [("Mercury", 0.39, 4879, 0), ("Venus", 0.72, 12104, 0), ("Earth", 1.00, 12742, 1),
           ("Mars", 1.52, 6779, 2), ("Jupiter", 5.20, 139820, 95), ("Saturn", 9.58, 116460, 146),
           ("Uranus", 19.22, 50724, 28), ("Neptune", 30.05, 49244, 16)]
tb = ["| Planet | Mean distance from Sun (AU) | Diameter (km) | Known moons |", "|---|---|---|---|"]
for p_, d_, di, mo in PLANETS:
    tb.append(f"| {p_} | {d_:.2f} | {di:,} | {mo} |")
add("ok-table-02", False, "markdown_table", "\n".join(tb) +
    "\n\nMoon counts change as new small moons are confirmed; these figures are from 2023.", "stop",
    "Table of the eight planets: distance from the sun in AU, diameter and number of moons.",
    "Eight distinct rows of planetary data.")

LANGS = [("Python", "1991", "Dynamic", "Data science, scripting, web back-ends"),
         ("JavaScript", "1995", "Dynamic", "Web front-ends, Node.js servers"),
         ("Java", "1995", "Static", "Enterprise back-ends, Android"),
         ("C", "1972", "Static", "Operating systems, embedded"),
         ("C++", "1985", "Static", "Games, high-performance systems"),
         ("Go", "2009", "Static", "Cloud services, CLIs"),
         ("Rust", "2015", "Static", "Systems programming with memory safety"),
         ("Ruby", "1995", "Dynamic", "Web apps (Rails)"),
         ("Kotlin", "2011", "Static", "Android, JVM back-ends"),
         ("Swift", "2014", "Static", "iOS and macOS apps")]
tb = ["| Language | First appeared | Typing | Typical use |", "|---|---|---|---|"]
tb += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in LANGS]
add("ok-table-03", False, "markdown_table", "Here's a quick comparison:\n\n" + "\n".join(tb), "stop",
    "Compare 10 popular programming languages in a table: year, typing discipline, typical use.",
    "A compact comparison table with ten distinct rows.")

# ---------------------------------------------------------------- similar_code_lines
OPS = ["NOP", "LOAD", "STORE", "ADD", "SUB", "MUL", "DIV", "AND", "OR", "XOR", "JMP", "JZ", "CALL", "RET",
       "PUSH", "POP"]
c = ["```c", "#include <stdint.h>", "#include <stdio.h>", "", "typedef enum {"]
c += [f"    OP_{o} = 0x{k:02X}," for k, o in enumerate(OPS)]
c += ["} Opcode;", "", "const char *opcode_name(uint8_t op) {", "    switch (op) {"]
for k, o in enumerate(OPS):
    c += [f"        case OP_{o}:", f"            return \"{o}\";"]
c += ["        default:", "            return \"???\";", "    }", "}", "", "int main(void) {",
      "    for (uint8_t op = 0; op < 18; op++) {", "        printf(\"0x%02X -> %s\\n\", op, opcode_name(op));",
      "    }", "    return 0;", "}", "```"]
add("ok-code-01", False, "similar_code_lines",
    "Here's an enum plus a lookup function for your toy VM's 16 opcodes:\n\n" + "\n".join(c), "stop",
    "Write C code with an enum for 16 VM opcodes (NOP, LOAD, STORE, ADD, ...) and a function returning each name.",
    "A long switch with one case per distinct opcode is normal, non-degenerate code.")

HTTP = [(200, "OK"), (201, "CREATED"), (202, "ACCEPTED"), (204, "NO_CONTENT"), (301, "MOVED_PERMANENTLY"),
        (302, "FOUND"), (304, "NOT_MODIFIED"), (307, "TEMPORARY_REDIRECT"), (308, "PERMANENT_REDIRECT"),
        (400, "BAD_REQUEST"), (401, "UNAUTHORIZED"), (403, "FORBIDDEN"), (404, "NOT_FOUND"),
        (405, "METHOD_NOT_ALLOWED"), (409, "CONFLICT"), (410, "GONE"), (415, "UNSUPPORTED_MEDIA_TYPE"),
        (422, "UNPROCESSABLE_ENTITY"), (429, "TOO_MANY_REQUESTS"), (500, "INTERNAL_SERVER_ERROR"),
        (501, "NOT_IMPLEMENTED"), (502, "BAD_GATEWAY"), (503, "SERVICE_UNAVAILABLE"), (504, "GATEWAY_TIMEOUT")]
py = ["```python", "from enum import IntEnum", "", "", "class HTTPStatus(IntEnum):"]
py += [f"    {n} = {v}" for v, n in HTTP]
py += ["", "    @property", "    def is_error(self) -> bool:", "        return self >= 400", "```", "",
       "(The standard library already has `http.HTTPStatus`, but this trimmed version is handy if you only need "
       "the common codes.)"]
add("ok-code-02", False, "similar_code_lines", "\n".join(py), "stop",
    "Write a Python IntEnum with the common HTTP status codes.",
    "24 distinct enum members; similar-looking lines are inherent to an enum.")

CASES = [("''", True), ("'a'", True), ("'aa'", True), ("'ab'", False), ("'racecar'", True), ("'Racecar'", True),
         ("'hello'", False), ("'A man, a plan, a canal: Panama'", True), ("'No lemon, no melon'", True),
         ("'12321'", True), ("'12345'", False), ("'Was it a car or a cat I saw?'", True), ("'palindrome'", False),
         ("'  '", True), ("'ab ba'", True)]
pt = ["```python", "import pytest", "", "from textutils import is_palindrome", "", "",
      "@pytest.mark.parametrize(", "    \"text, expected\",", "    ["]
pt += [f"        ({a}, {b})," for a, b in CASES]
pt += ["    ],", ")", "def test_is_palindrome(text, expected):", "    assert is_palindrome(text) is expected",
       "", "", "def test_rejects_none():", "    with pytest.raises(TypeError):", "        is_palindrome(None)",
       "```", "", "The cases cover empty strings, case-insensitivity, punctuation and whitespace."]
add("ok-code-03", False, "similar_code_lines", "\n".join(pt), "stop",
    "Write thorough pytest tests for an is_palindrome(text) function that ignores case, spaces and punctuation.",
    "Parametrized test cases look alike but each tests a different input.")

BOOKS = [("The Left Hand of Darkness", "Ursula K. Le Guin", 1969), ("Beloved", "Toni Morrison", 1987),
         ("Never Let Me Go", "Kazuo Ishiguro", 2005), ("The Road", "Cormac McCarthy", 2006),
         ("Things Fall Apart", "Chinua Achebe", 1958), ("One Hundred Years of Solitude", "Gabriel García Márquez", 1967),
         ("The Remains of the Day", "Kazuo Ishiguro", 1989), ("Dune", "Frank Herbert", 1965),
         ("Middlemarch", "George Eliot", 1871), ("The Name of the Rose", "Umberto Eco", 1980),
         ("Wolf Hall", "Hilary Mantel", 2009), ("Kindred", "Octavia E. Butler", 1979)]
sq = ["```sql", "INSERT INTO books (title, author, published_year) VALUES"]
sq += [f"    ('{t.replace(chr(39), chr(39) * 2)}', '{a}', {y})" + ("," if k < len(BOOKS) - 1 else ";")
       for k, (t, a, y) in enumerate(BOOKS)]
sq.append("```")
add("ok-code-04", False, "similar_code_lines", "\n".join(sq) + "\n\nI used a single multi-row INSERT, which is "
    "faster than twelve separate statements.", "stop",
    "Give me an SQL insert for 12 well-known novels into a books(title, author, published_year) table.",
    "Twelve distinct rows in one INSERT statement; similar shape is expected.")

I18N = {"greeting": ("Hello", "Bonjour", "Hola", "Hallo"), "farewell": ("Goodbye", "Au revoir", "Adiós", "Auf Wiedersehen"),
        "login": ("Log in", "Se connecter", "Iniciar sesión", "Anmelden"),
        "logout": ("Log out", "Se déconnecter", "Cerrar sesión", "Abmelden"),
        "save": ("Save", "Enregistrer", "Guardar", "Speichern"), "cancel": ("Cancel", "Annuler", "Cancelar", "Abbrechen"),
        "delete": ("Delete", "Supprimer", "Eliminar", "Löschen"), "search": ("Search", "Rechercher", "Buscar", "Suchen"),
        "settings": ("Settings", "Paramètres", "Ajustes", "Einstellungen"), "help": ("Help", "Aide", "Ayuda", "Hilfe")}
js = ["```js", "export const messages = {"]
for li, lang in enumerate(["en", "fr", "es", "de"]):
    js.append(f"  {lang}: {{")
    for key, vals in I18N.items():
        js.append(f"    {key}: '{vals[li]}',")
    js.append("  },")
js += ["};", "", "export function t(lang, key) {", "  return messages[lang]?.[key] ?? messages.en[key] ?? key;",
       "}", "```"]
add("ok-code-05", False, "similar_code_lines", "\n".join(js), "stop",
    "Create a JS i18n messages object for en, fr, es, de with keys greeting, farewell, login, logout, save, cancel, "
    "delete, search, settings, help, plus a t() helper.",
    "Four locale blocks share the same keys by design; the values differ per language.")

GOF = [("ID", "int64", "id"), ("Email", "string", "email"), ("DisplayName", "string", "display_name"),
       ("AvatarURL", "string", "avatar_url,omitempty"), ("Bio", "string", "bio,omitempty"),
       ("Country", "string", "country,omitempty"), ("IsAdmin", "bool", "is_admin"),
       ("EmailVerified", "bool", "email_verified"), ("CreatedAt", "time.Time", "created_at"),
       ("UpdatedAt", "time.Time", "updated_at"), ("LastLoginAt", "*time.Time", "last_login_at,omitempty")]
go = ["```go", "package model", "", "import \"time\"", "", "// User is the public representation of an account.",
      "type User struct {"]
go += [f"\t{f} {ty} `json:\"{j}\" db:\"{j.split(',')[0]}\"`" for f, ty, j in GOF]
go += ["}", "```"]
add("ok-code-06", False, "similar_code_lines", "\n".join(go), "stop",
    "Go struct for a User with JSON and db tags: id, email, display name, avatar, bio, country, admin flag, "
    "verified flag, timestamps.",
    "Each struct field line is distinct; repeated tag syntax is normal Go.")

# ---------------------------------------------------------------- numbered_list
CAPS = [("Argentina", "Buenos Aires"), ("Australia", "Canberra"), ("Austria", "Vienna"), ("Brazil", "Brasília"),
        ("Canada", "Ottawa"), ("Chile", "Santiago"), ("China", "Beijing"), ("Egypt", "Cairo"),
        ("Ethiopia", "Addis Ababa"), ("Finland", "Helsinki"), ("France", "Paris"), ("Germany", "Berlin"),
        ("Ghana", "Accra"), ("India", "New Delhi"), ("Indonesia", "Jakarta"), ("Ireland", "Dublin"),
        ("Japan", "Tokyo"), ("Kenya", "Nairobi"), ("Mexico", "Mexico City"), ("Morocco", "Rabat"),
        ("Netherlands", "Amsterdam"), ("New Zealand", "Wellington"), ("Nigeria", "Abuja"), ("Norway", "Oslo"),
        ("Peru", "Lima"), ("Poland", "Warsaw"), ("South Korea", "Seoul"), ("Spain", "Madrid"),
        ("Turkey", "Ankara"), ("Vietnam", "Hanoi")]
add("ok-list-01", False, "numbered_list",
    "Here are 30 countries and their capitals, in alphabetical order:\n\n" +
    "\n".join(f"{k}. {a} — {b}" for k, (a, b) in enumerate(CAPS, 1)) +
    "\n\nA few common trick questions are in there: Australia (Canberra, not Sydney), Turkey (Ankara, not "
    "Istanbul), and Nigeria (Abuja, not Lagos).", "stop",
    "List 30 countries and their capitals.",
    "A numbered list of 30 distinct country/capital pairs.")

IDIOMS = [("Break the ice", "to start a conversation in an awkward situation"),
          ("Hit the sack", "to go to bed"),
          ("Under the weather", "feeling slightly ill"),
          ("Bite the bullet", "to do something unpleasant that you have been avoiding"),
          ("Spill the beans", "to reveal a secret"),
          ("Cost an arm and a leg", "to be very expensive"),
          ("Once in a blue moon", "very rarely"),
          ("The ball is in your court", "it's your turn to decide or act"),
          ("Let the cat out of the bag", "to accidentally reveal a secret"),
          ("Beat around the bush", "to avoid talking about the main point"),
          ("Call it a day", "to stop working for the day"),
          ("Cut corners", "to do something cheaply or carelessly"),
          ("Get out of hand", "to become out of control"),
          ("Hang in there", "don't give up"),
          ("Miss the boat", "to miss an opportunity"),
          ("On thin ice", "in a risky situation"),
          ("Pull someone's leg", "to joke with someone"),
          ("Burn the midnight oil", "to work late into the night"),
          ("A blessing in disguise", "something that seems bad but turns out well"),
          ("Costs a pretty penny", "is expensive"),
          ("Sit on the fence", "to stay neutral and avoid choosing a side"),
          ("Throw in the towel", "to give up"),
          ("The last straw", "the final problem that makes a situation unbearable"),
          ("When pigs fly", "something that will never happen"),
          ("Add fuel to the fire", "to make a bad situation worse")]
add("ok-list-02", False, "numbered_list",
    "\n".join(f"{k}. **{a}** – {b}." for k, (a, b) in enumerate(IDIOMS, 1)), "stop",
    "List 25 common English idioms with short meanings for my ESL students.",
    "25 distinct idioms, each with its own meaning.")

CMDS = [("ls -lah", "list files with sizes and hidden files"), ("cd -", "go back to the previous directory"),
        ("pwd", "print the current directory"), ("cp -r src dst", "copy a directory recursively"),
        ("mv old new", "rename or move a file"), ("rm -i file", "delete a file with confirmation"),
        ("mkdir -p a/b/c", "create nested directories"), ("find . -name '*.log'", "find files by name"),
        ("grep -rn 'TODO' .", "search text recursively with line numbers"),
        ("less file", "page through a file"), ("tail -f app.log", "follow a log file as it grows"),
        ("head -n 20 file", "show the first 20 lines"), ("wc -l file", "count lines"),
        ("sort | uniq -c", "count duplicate lines"), ("chmod +x script.sh", "make a file executable"),
        ("chown user:group file", "change file ownership"), ("df -h", "show disk usage per filesystem"),
        ("du -sh *", "show size of each item in the directory"), ("free -h", "show memory usage"),
        ("top", "interactive process monitor"), ("ps aux | grep nginx", "find a running process"),
        ("kill -15 PID", "ask a process to terminate"), ("tar -czf a.tgz dir", "create a compressed archive"),
        ("tar -xzf a.tgz", "extract an archive"), ("ssh user@host", "log into a remote machine"),
        ("scp file user@host:/tmp", "copy a file to a remote machine"),
        ("rsync -avz src/ host:dst/", "sync directories efficiently"), ("curl -I URL", "fetch HTTP headers"),
        ("ping -c 4 host", "test network reachability"), ("ss -tulpn", "list listening ports"),
        ("history | tail", "show recent commands"), ("which python3", "show the path of a command"),
        ("man rsync", "read the manual page"), ("ln -s target link", "create a symbolic link"),
        ("journalctl -u nginx -f", "follow a systemd service's logs"),
        ("systemctl restart nginx", "restart a service"), ("crontab -e", "edit scheduled jobs"),
        ("xargs", "build commands from standard input"), ("watch -n 2 cmd", "re-run a command every 2 seconds"),
        ("uname -a", "show kernel and system info")]
add("ok-list-03", False, "numbered_list",
    "Here are 40 Linux commands worth knowing:\n\n" +
    "\n".join(f"{k}. `{a}` — {b}" for k, (a, b) in enumerate(CMDS, 1)), "stop",
    "Give me 40 useful Linux commands with a one-line description each.",
    "40 distinct commands, each with a different description.")

PROJ = ["A to-do list app that stores tasks in local storage", "A command-line tip calculator",
        "A weather dashboard using a free weather API", "A personal budget tracker with monthly charts",
        "A flashcard quiz app with spaced repetition", "A URL shortener with click statistics",
        "A Markdown note-taking app", "A pomodoro timer with desktop notifications",
        "A recipe finder that filters by ingredients you have", "A simple chat room using WebSockets",
        "A tic-tac-toe game with an unbeatable AI (minimax)", "A habit tracker with streaks",
        "A web scraper that emails you when a price drops", "A password generator with strength meter",
        "A movie watchlist using a public film database API", "A Discord or Slack bot that posts daily quotes",
        "A file organizer that sorts downloads by type", "A personal portfolio website",
        "An expense splitter for group trips", "A Sudoku solver using backtracking",
        "A typing speed test", "A blog with user accounts and comments",
        "A QR code generator", "A plant-watering reminder app", "A kanban board with drag and drop"]
add("ok-list-04", False, "numbered_list",
    "\n".join(f"{k}. {p}" for k, p in enumerate(PROJ, 1)) +
    "\n\nStart with 1–5 if you're brand new; 10, 11, 13 and 25 are good next steps once you're comfortable "
    "with the basics.", "stop",
    "Give me 25 beginner programming project ideas.",
    "25 distinct project ideas plus a short recommendation.")

# ---------------------------------------------------------------- lyrics_refrain
CHORUS = ("(Chorus)\nOh, the tide rolls in and the tide rolls out,\nAnd the gulls all know what it's all about,\n"
          "So raise your cup to the silver sea,\nShe'll carry you home, she'll carry me.\n")
SONG = ("**\"The Silver Sea\"**\n\n(Verse 1)\nWe sailed from Cork on a winter's morn,\nThe sky was grey and the "
        "sails were worn,\nThe captain swore by the northern star\nWe'd be home by spring, though the road was far.\n\n"
        + CHORUS + "\n(Verse 2)\nThe storm came down off the Faroe shore,\nWe bailed all night till our hands were "
        "sore,\nBut young Tom Reilly, he sang us through\nWith a fiddle tune that the whole crew knew.\n\n" + CHORUS +
        "\n(Verse 3)\nNow the harbour lights are in sight at last,\nThe worst of the winter weather's past,\nAnd "
        "there on the quay stands my love for me\nWith a lantern lit by the silver sea.\n\n" + CHORUS +
        "\n(Outro)\nShe'll carry you home, she'll carry me...")
add("ok-lyrics-01", False, "lyrics_refrain", SONG, "stop",
    "Write a sea shanty with three verses and a chorus that repeats after each verse.",
    "The chorus repeats three times because the user asked for a refrain after each verse.")

ANA = ("**I Remember**\n\nI remember the kitchen that smelled of cardamom and rain,\nI remember my grandmother's "
       "hands, folding dough like letters,\nI remember the radio murmuring news no one listened to,\nI remember the "
       "blue bicycle and the scar it gave me,\nI remember summers that lasted longer than years do now,\nI remember "
       "the first time the house felt small,\nI remember leaving, and not looking back,\nI remember, now, wishing "
       "that I had.")
add("ok-lyrics-02", False, "lyrics_refrain", ANA, "stop",
    "Write a short poem using anaphora — every line should start with 'I remember'.",
    "Each line starts with 'I remember' as explicitly requested, but every line has new content.")

CUM = [("the sack of beans", "that came from the hills of Huila"),
       ("the grinder", "that crushed the beans from the sack"),
       ("the barista", "who loaded the grinder"),
       ("the milk", "that was steamed by the barista"),
       ("the cat", "that sat by the milk"),
       ("the regular", "who fed the cat")]
verses_txt = []
for k in range(len(CUM)):
    v = [f"This is {CUM[k][0]}"]
    for j in range(k, 0, -1):
        v.append(CUM[j][1])
    v.append(CUM[0][1] + ",")
    v.append("in the coffee shop on Maple Street.")
    verses_txt.append("\n".join(v))
add("ok-lyrics-03", False, "lyrics_refrain",
    "**The Coffee Shop on Maple Street** (a cumulative rhyme)\n\n" + "\n\n".join(verses_txt), "stop",
    "Write a cumulative nursery rhyme like 'This is the house that Jack built', but about a coffee shop, "
    "six verses.",
    "A cumulative rhyme repeats earlier lines by design; each verse adds a new element and the rhyme ends.")

ANIMALS = [("cow", "moo"), ("pig", "oink"), ("duck", "quack"), ("sheep", "baa"), ("horse", "neigh")]
om = []
for a, s in ANIMALS:
    om.append(f"Old MacDonald had a farm, E-I-E-I-O,\nAnd on that farm he had a {a}, E-I-E-I-O,\n"
              f"With a {s} {s} here, and a {s} {s} there,\nHere a {s}, there a {s}, everywhere a {s} {s},\n"
              "Old MacDonald had a farm, E-I-E-I-O!")
add("ok-lyrics-04", False, "lyrics_refrain", "\n\n".join(om), "stop",
    "Can you write out all the verses of Old MacDonald for cow, pig, duck, sheep and horse? It's for my "
    "kid's sing-along.",
    "The traditional song's repeated structure was requested; five verses for five animals, then it ends.")

# ---------------------------------------------------------------- requested_repetition
add("ok-rep-01", False, "requested_repetition", " ".join(["hello"] * 50), "stop",
    "Write the word 'hello' 50 times.",
    "Exactly 50 repetitions, as the user explicitly asked.")
add("ok-rep-02", False, "requested_repetition", "\n".join(["I will not talk in class."] * 20), "stop",
    "Repeat the sentence 'I will not talk in class.' 20 times, each on a new line.",
    "Exactly 20 lines, matching the explicit request.")
add("ok-rep-03", False, "requested_repetition", ", ".join(str(k) for k in range(1, 101)), "stop",
    "Print the numbers from 1 to 100 separated by commas.",
    "A requested numeric sequence of 100 distinct numbers.")
add("ok-rep-04", False, "requested_repetition",
    "Buffalo buffalo Buffalo buffalo buffalo buffalo Buffalo buffalo.\n\nThis is a grammatically valid English "
    "sentence. It uses three meanings of the word: the city of Buffalo, New York; the animal (bison); and the verb "
    "\"to buffalo\", meaning to bully or intimidate. Read it as: \"Bison from Buffalo, whom other bison from "
    "Buffalo bully, themselves bully bison from Buffalo.\"", "stop",
    "What's that famous sentence that's just the word buffalo 8 times? Explain it.",
    "The eight 'buffalo' words are the requested famous sentence, followed by a clear explanation.")
add("ok-rep-05", False, "requested_repetition", " ".join(["Na"] + ["na"] * 15) + "... BATMAN!", "stop",
    "Type the Batman theme: 'na' 16 times then Batman.",
    "Sixteen 'na's then 'BATMAN!' exactly as requested.")
add("ok-rep-06", False, "requested_repetition",
    "Here you go — 15 lines for your Halloween prop:\n\n" +
    "\n".join(["All work and no play makes Jack a dull boy."] * 15) +
    "\n\nTip: print it in a typewriter font such as Courier for the full *Shining* effect.", "stop",
    "For a Halloween decoration, write 'All work and no play makes Jack a dull boy.' 15 times.",
    "The requested sentence appears exactly 15 times, framed by an intro and a tip.")

# ---------------------------------------------------------------- json_array
USERS = [("Amelia Hart", "amelia.hart@example.com", "admin", True),
         ("Bruno Silva", "bruno.silva@example.com", "editor", True),
         ("Chloe Nguyen", "chloe.nguyen@example.com", "viewer", False),
         ("Dmitri Volkov", "dmitri.volkov@example.com", "editor", True),
         ("Esme Okoro", "esme.okoro@example.com", "viewer", True),
         ("Felix Braun", "felix.braun@example.com", "viewer", False),
         ("Grace Lin", "grace.lin@example.com", "admin", True),
         ("Hiro Tanaka", "hiro.tanaka@example.com", "viewer", True),
         ("Isla Murphy", "isla.murphy@example.com", "editor", False),
         ("Jonas Berg", "jonas.berg@example.com", "viewer", True)]
arr = [{"id": k, "name": n, "email": e, "role": r, "active": a} for k, (n, e, r, a) in enumerate(USERS, 1)]
add("ok-json-01", False, "json_array", "```json\n" + json.dumps(arr, indent=2, ensure_ascii=False) + "\n```",
    "stop", "Give me a JSON array of 10 mock users with id, name, email, role and active flag.",
    "Ten similar-shaped objects with distinct values, exactly what was requested.")

rng = random.Random(11)
PRODS = ["Trail Running Shoes", "Merino Wool Socks", "Ultralight Tent", "Down Sleeping Bag", "Headlamp 400lm",
         "Trekking Poles", "Water Filter", "Camp Stove", "Titanium Mug", "Rain Jacket", "Fleece Pullover",
         "Dry Bag 20L", "First Aid Kit", "Insulated Bottle", "Daypack 28L"]
CATS = {"Shoes": [0], "Clothing": [1, 9, 10], "Shelter": [2, 3], "Gear": [4, 5, 6, 7, 8, 11, 12, 13, 14]}
cat_of = {i: c for c, ids in CATS.items() for i in ids}
arr = []
for k, p_ in enumerate(PRODS):
    arr.append({"sku": f"OUT-{1000 + k * 7}", "name": p_, "category": cat_of[k],
                "price": round(rng.uniform(9, 320), 2), "stock": rng.randint(0, 140),
                "rating": round(rng.uniform(3.6, 4.9), 1)})
add("ok-json-02", False, "json_array", json.dumps(arr, indent=2), "stop",
    "Generate a JSON product catalog for an outdoor store with 15 products (sku, name, category, price, stock, "
    "rating). Output only JSON.",
    "15 distinct product objects, as requested, no duplicates.")

CITIES = [("Paris", 2.3522, 48.8566, 2102650), ("London", -0.1276, 51.5072, 8866180),
          ("Berlin", 13.4050, 52.5200, 3755251), ("Madrid", -3.7038, 40.4168, 3332035),
          ("Rome", 12.4964, 41.9028, 2749031), ("Vienna", 16.3738, 48.2082, 1982097),
          ("Amsterdam", 4.9041, 52.3676, 918117), ("Prague", 14.4378, 50.0755, 1357326)]
fc = {"type": "FeatureCollection", "features": [
    {"type": "Feature", "properties": {"name": n, "population": pop},
     "geometry": {"type": "Point", "coordinates": [lon, lat]}} for n, lon, lat, pop in CITIES]}
add("ok-json-03", False, "json_array",
    "Here's a GeoJSON FeatureCollection (coordinates are [longitude, latitude]):\n\n```json\n" +
    json.dumps(fc, indent=2) + "\n```", "stop",
    "Make a GeoJSON FeatureCollection of 8 European capitals as points with name and population.",
    "Eight distinct GeoJSON features; deeply nested and repetitive in shape but correct.")

# ---------------------------------------------------------------- log_excerpt
rng = random.Random(5)
IPS = ["10.0.3.17", "10.0.3.18", "203.0.113.44", "198.51.100.7", "192.0.2.91"]
PATHS = [("GET", "/api/v1/orders?page=2", 200), ("POST", "/api/v1/orders", 201), ("GET", "/static/app.js", 304),
         ("GET", "/api/v1/users/me", 401), ("GET", "/api/v1/products/8812", 404), ("PUT", "/api/v1/cart", 200)]
lg = []
sec = 0
for k in range(30):
    sec += rng.randint(0, 4)
    ts = f"14/Mar/2024:09:{12 + sec // 60:02d}:{sec % 60:02d} +0000"
    if k % 5 == 0:
        lg.append(f"10.0.0.2 - - [{ts}] \"GET /healthz HTTP/1.1\" 200 2 \"-\" \"kube-probe/1.28\"")
    else:
        m, pth, st = rng.choice(PATHS)
        lg.append(f"{rng.choice(IPS)} - - [{ts}] \"{m} {pth} HTTP/1.1\" {st} {rng.randint(80, 9000)} \"-\" "
                  f"\"Mozilla/5.0 (X11; Linux x86_64)\"")
add("ok-log-01", False, "log_excerpt",
    "Here's a realistic nginx access-log excerpt you can use for your parser tests:\n\n```\n" + "\n".join(lg) +
    "\n```\n\nIt includes Kubernetes health-check probes every few requests, a 401, a 404, and a 304 for a "
    "cached static asset.", "stop",
    "Give me a sample nginx access log (about 30 lines) including health checks and a few error codes, for "
    "testing my log parser.",
    "Log lines share a format and health checks recur, but timestamps and requests vary; this is a requested sample.")

APPLOG = """```
2024-05-02 10:14:03,118 INFO  [main] app.server: Starting order-service v2.7.1 (pid 4182)
2024-05-02 10:14:03,402 INFO  [main] app.db: Connecting to postgres at db.internal:5432
2024-05-02 10:14:08,409 WARNING [main] app.db: Connection refused, retrying in 2s (attempt 1/5)
2024-05-02 10:14:10,415 WARNING [main] app.db: Connection refused, retrying in 4s (attempt 2/5)
2024-05-02 10:14:14,421 WARNING [main] app.db: Connection refused, retrying in 8s (attempt 3/5)
2024-05-02 10:14:22,610 INFO  [main] app.db: Connected (server version 15.6)
2024-05-02 10:14:22,733 INFO  [main] app.migrations: 2 pending migrations applied in 94 ms
2024-05-02 10:14:22,901 INFO  [main] app.server: Listening on 0.0.0.0:8080
2024-05-02 10:15:01,044 INFO  [worker-1] app.orders: Created order 58213 for customer 9921 (3 items)
2024-05-02 10:15:07,530 ERROR [worker-3] app.payments: Payment provider timeout after 10000 ms (order 58214)
2024-05-02 10:15:07,531 INFO  [worker-3] app.orders: Order 58214 moved to PENDING_PAYMENT
```

What happened: the database container was still starting, so the service retried with exponential backoff (2s, 4s, 8s) and connected on the fourth try. The later payment timeout is unrelated — it comes from the external provider."""
add("ok-log-02", False, "log_excerpt", APPLOG, "stop",
    "Show me an example application log where the service retries a DB connection with exponential backoff "
    "before succeeding, and explain it.",
    "Three similar retry lines with increasing attempt numbers are a legitimate, bounded log pattern.")

K8S = """```
$ kubectl get pods -n shop
NAME                               READY   STATUS             RESTARTS        AGE
cart-7d9f8b6c5-2kxlm               1/1     Running            0               3d4h
cart-7d9f8b6c5-8wq7n               1/1     Running            0               3d4h
checkout-6c4d7f9d88-hz2tp          0/1     CrashLoopBackOff   14 (52s ago)    48m
checkout-6c4d7f9d88-x7c9r          0/1     CrashLoopBackOff   14 (61s ago)    48m
frontend-5b8c9d7f6-4jv2s           1/1     Running            0               6d
frontend-5b8c9d7f6-ptl9d           1/1     Running            1 (2d ago)      6d
redis-0                            1/1     Running            0               12d

$ kubectl logs checkout-6c4d7f9d88-hz2tp -n shop --previous
Error: required environment variable STRIPE_API_KEY is not set
```

Both `checkout` replicas are crash-looping for the same reason: the new deployment 48 minutes ago dropped the `STRIPE_API_KEY` variable. Check the `envFrom`/`secretRef` section of the checkout Deployment and make sure the `stripe-credentials` Secret exists in the `shop` namespace."""
add("ok-log-03", False, "log_excerpt", K8S, "stop",
    "My checkout pods keep restarting. What would kubectl output typically look like and how do I debug it?",
    "Tabular kubectl output with similar rows, followed by a diagnosis.")

# ---------------------------------------------------------------- requested_dialogue
SCREEN = """INT. SMALL APARTMENT KITCHEN - NIGHT

ALICE (30s, still in her work blazer) stares into an open, nearly empty fridge. BOB (30s) enters, balancing two grocery bags.

BOB
You said we had nothing. I believed you.

ALICE
We have mustard. And one egg of uncertain age.

BOB
(setting the bags down)
Then tonight, you're in luck. I have pasta, garlic, and a lemon I'm very proud of.

ALICE
You're proud of a lemon.

BOB
It's the good kind. The bumpy ones.

She closes the fridge and leans against it.

ALICE
I got the email. The London job.

Bob freezes, a box of spaghetti in his hand.

BOB
And?

ALICE
And they want an answer by Friday.

BOB
(carefully)
What do you want the answer to be?

ALICE
I want it to be yes. I just didn't want to say it to an empty kitchen first.

Bob puts the spaghetti down, crosses to her, and takes her hands.

BOB
Then say it to a slightly less empty kitchen.

ALICE
(smiling, eyes wet)
Yes.

BOB
Good. Now help me zest this lemon. It deserves an audience.

FADE OUT."""
add("ok-dialog-01", False, "requested_dialogue", SCREEN, "stop",
    "Write a short screenplay scene between Alice and Bob in their kitchen where Alice reveals she got a job "
    "in London.",
    "The user asked for a screenplay; alternating speaker lines are the requested format.")

SUPPORT = """Here's a sample transcript you can drop into the help-center docs:

---

**User:** Hi, I was charged twice for my March subscription.

**Bot:** Sorry about that! I can help. Could you confirm the email address on your account?

**User:** sam.rivera@example.com

**Bot:** Thanks, Sam. I can see two charges of $12.00 on March 3. One of them was a pre-authorization that failed to release. I've submitted a refund for the duplicate — it should appear within 5–7 business days.

**User:** Great. Will this happen again next month?

**Bot:** It shouldn't. The issue was caused by a temporary glitch with our payment processor on March 3, which has since been fixed. If you see another duplicate charge, reply here and I'll escalate it to a human agent.

**User:** Perfect, thanks!

**Bot:** You're welcome! Is there anything else I can help you with today?

---

Feel free to swap the amount and dates for your own example."""
add("ok-dialog-02", False, "requested_dialogue", SUPPORT, "stop",
    "Write a sample conversation between a user and our billing support chatbot about a duplicate charge, "
    "for our help-center documentation.",
    "'User:' lines are part of a requested sample transcript, not invented turns.")

FT = """Here are three example exchanges in the format you described:

Example 1
User: How long should I rest a steak after cooking?
Assistant: Rest it for about 5 minutes for thin cuts and 8–10 minutes for thick ones. This lets the juices redistribute so they don't run out when you slice it.

Example 2
User: Can I substitute baking soda for baking powder?
Assistant: Only with an adjustment. Baking soda is about three to four times stronger and needs an acid. For 1 tsp baking powder, use 1/4 tsp baking soda plus 1/2 tsp cream of tartar or swap some of the liquid for buttermilk.

Example 3
User: Why did my risotto turn out gluey?
Assistant: Usually from overcooking or stirring too vigorously after the rice is done. Take it off the heat while it's still slightly loose and al dente — it will keep thickening as it sits — and finish with butter and cheese off the heat."""
add("ok-dialog-03", False, "requested_dialogue", FT, "stop",
    "Write 3 example User/Assistant exchanges about cooking, each starting with 'User:' and 'Assistant:', for "
    "my fine-tuning dataset.",
    "The user explicitly asked for User/Assistant formatted examples.")

SOCR = """**On Courage — a short dialogue**

SOCRATES: Tell me, Laches, what is courage?

LACHES: That's easy, Socrates. A man is courageous if he stays at his post and does not run from the enemy.

SOCRATES: And the Scythian horsemen, who fight while retreating — are they cowards?

LACHES: No... they are skilled fighters. Their retreat is a tactic.

SOCRATES: Then courage cannot simply be standing still. Perhaps it is something of the soul?

LACHES: Yes — a kind of endurance of the soul.

SOCRATES: Every kind of endurance? What of a man who stubbornly endures in spending his money foolishly?

LACHES: No, that is not courage. It must be wise endurance.

SOCRATES: But consider two divers. One knows the art of diving and enters the well calmly; the other knows nothing of it and jumps in anyway. Which endures more?

LACHES: The ignorant one, I suppose.

SOCRATES: And yet you said courage is wise endurance. So which is the braver?

LACHES: By Zeus, Socrates, I no longer know what I think.

SOCRATES: Then we are at least better off than before, for now we know that we do not know."""
add("ok-dialog-04", False, "requested_dialogue", SOCR, "stop",
    "Write a short Socratic dialogue about the definition of courage, in the style of Plato's Laches.",
    "A requested philosophical dialogue with speaker labels.")

# ---------------------------------------------------------------- chat_template_example
CHATML = """ChatML wraps each message in special tokens that mark who is speaking. A full conversation looks like this:

```
<|im_start|>system
You are a helpful assistant.<|im_end|>
<|im_start|>user
What's the tallest mountain in Africa?<|im_end|>
<|im_start|>assistant
Mount Kilimanjaro, at 5,895 m.<|im_end|>
<|im_start|>user
How long does it take to climb?<|im_end|>
<|im_start|>assistant
```

Key points:

- `<|im_start|>` is followed by the role (`system`, `user`, or `assistant`) and a newline.
- `<|im_end|>` closes each message.
- To ask the model for a reply, you end the prompt with an open `<|im_start|>assistant` line and let it generate until it emits `<|im_end|>`.

Most libraries build this for you: in Hugging Face Transformers, `tokenizer.apply_chat_template(messages, add_generation_prompt=True)` produces exactly this string."""
add("ok-chatfmt-01", False, "chat_template_example", CHATML, "stop",
    "What does the ChatML prompt format look like? Show an example with a couple of turns.",
    "Chat-template tokens and a user turn appear inside a code block as an explicitly requested example.")

LLAMA3 = """Llama 3 Instruct uses header tokens for roles and `<|eot_id|>` to end each turn:

```text
<|begin_of_text|><|start_header_id|>system<|end_header_id|>

You are a concise assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>

Summarize the plot of Hamlet in one sentence.<|eot_id|><|start_header_id|>assistant<|end_header_id|>

```

Notes:
1. There are two newlines after each `<|end_header_id|>`.
2. The prompt ends with the assistant header, so the model's completion is the assistant's reply.
3. Set `<|eot_id|>` as a stop token — if you only stop on `<|end_of_text|>`, the model may keep going and start writing a fake user turn."""
add("ok-chatfmt-02", False, "chat_template_example", LLAMA3, "stop",
    "How should I format a prompt for Llama 3 Instruct when calling the raw completion endpoint?",
    "Template tokens are shown in a code block as documentation the user asked for.")

PYPROMPT = """Here's a minimal way to build a plain-text prompt from a message history:

```python
def build_prompt(history, new_message):
    prompt = "The following is a conversation with a helpful assistant.\\n\\n"
    for turn in history:
        speaker = "User" if turn["role"] == "user" else "Assistant"
        prompt += f"{speaker}: {turn['content']}\\n"
    prompt += f"User: {new_message}\\nAssistant:"
    return prompt


history = [
    {"role": "user", "content": "Hi!"},
    {"role": "assistant", "content": "Hello! How can I help?"},
]
print(build_prompt(history, "What's 2 + 2?"))
```

Output:

```
The following is a conversation with a helpful assistant.

User: Hi!
Assistant: Hello! How can I help?
User: What's 2 + 2?
Assistant:
```

When you call the model, pass `stop=["\\nUser:"]` so generation ends before the model starts writing the user's next line."""
add("ok-chatfmt-03", False, "chat_template_example", PYPROMPT, "stop",
    "How do I turn a list of chat messages into a single text prompt for a base model in Python?",
    "'User:' lines appear inside code and its sample output, which the user asked for.")

# ---------------------------------------------------------------- long_essay
PRESS = """# The Printing Press and the Making of the Modern World

Before the middle of the fifteenth century, a book in Europe was a rare and expensive object. Each copy had to be written out by hand, usually by monks in monastic scriptoria or by professional scribes working for universities and wealthy patrons. A single Bible could take a scribe more than a year to complete, and errors crept in with every new copy. Knowledge existed, but it moved slowly, and it was concentrated in the hands of the Church, the nobility, and a small educated elite.

Around 1440, Johannes Gutenberg, a goldsmith from Mainz, began experimenting with a system that would change this situation. His achievement was not a single invention but a combination of several. He developed movable metal type cast from an alloy of lead, tin, and antimony that melted at a low temperature yet cooled into durable letters. He designed a hand mould that allowed those letters to be produced quickly and uniformly. He formulated an oil-based ink that clung to metal better than the water-based inks used for woodblocks, and he adapted the screw press already familiar from wine and olive-oil production. Together these elements made it possible to print hundreds of identical pages in the time a scribe needed to copy a few.

Gutenberg's best-known product, the forty-two-line Bible completed around 1455, showed that printed books could rival the beauty of manuscripts. Roughly 180 copies were produced, some on paper and some on vellum, and many were finished by hand with decorated initials so that they looked familiar to buyers. Ironically, the project ruined Gutenberg financially; a lawsuit with his backer, Johann Fust, cost him much of his equipment. But the technique could not be contained. Apprentices and rivals carried it along the trade routes of the Rhine and across the Alps.

The spread was astonishingly fast. By 1500, presses were operating in more than 250 European towns, and historians estimate that somewhere between eight and twenty million volumes had been printed. Venice became a major center of the trade. There, Aldus Manutius published compact editions of Greek and Latin classics in a new italic typeface, producing books that scholars could carry in a coat pocket rather than consult on a lectern. The price of books fell dramatically, and the printed page became an ordinary commodity rather than a treasure.

Cheap printing transformed religion first. When Martin Luther posted his Ninety-five Theses in 1517, printers in several cities reproduced them within weeks. Luther understood the new medium better than his opponents: he wrote short, punchy pamphlets in German rather than long treatises in Latin, and his translation of the New Testament in 1522 put scripture directly into the hands of ordinary readers. The Reformation was, among other things, the first mass-media campaign, and the Catholic response, from catechisms to the Index of Prohibited Books first issued in 1559, was fought with printed paper as well.

Science changed too, though more quietly. A manuscript diagram copied by hand tended to decay with each generation, as artists simplified or misunderstood what they saw. Printed woodcuts and engravings, by contrast, were identical in every copy. When Andreas Vesalius published his anatomy, *De humani corporis fabrica*, in 1543, readers across Europe could examine exactly the same illustrations and argue about exactly the same details. The historian Elizabeth Eisenstein argued that this fixity made knowledge cumulative: errors could be spotted, corrected in the next edition, and the corrections themselves would spread. Astronomical tables, maps, and mathematical texts all benefited from the same stability.

Printing also shaped languages and nations. Printers wanted to sell as many copies as possible, so they favored the dialects spoken by the largest reading public. In England, William Caxton, who set up his press at Westminster in 1476, had to decide which of the country's many spellings and word forms to use; his choices, and those of the printers who followed him, helped standardize written English. Similar processes occurred in German, French, and Italian. Over time, a shared printed language helped people who would never meet imagine themselves as members of the same community, a development that scholars have linked to the rise of national identity.

Literacy followed the availability of books. It is difficult to measure reading ability in the fifteenth and sixteenth centuries, but the number of schools, the growth of a market for almanacs, ballads, and cheap chapbooks, and the appearance of the first regularly published newspapers in the early seventeenth century all point in the same direction. Reading gradually shifted from a communal, spoken activity, in which one literate person read aloud to others, toward the private, silent reading we take for granted today.

None of this means that printing was a purely European story. Woodblock printing flourished in China for centuries before Gutenberg; the *Diamond Sutra* found at Dunhuang is dated 868. Around 1040, the artisan Bi Sheng experimented with movable type made of baked clay, and in Korea the Buddhist text known as the *Jikji* was printed with movable metal type in 1377. Why, then, did movable type have a more explosive impact in Europe? Part of the answer lies in the alphabet: a few dozen letters are far easier to cast, store, and compose than the thousands of characters needed for Chinese. Part lies in economics and politics: Europe's fragmented states and competitive commercial towns made it hard for any single authority to control the new industry.

Looking back, the printing press is often compared to the internet, and the comparison is useful if not exact. Both technologies drastically lowered the cost of copying and distributing information. Both were greeted with excitement about the spread of learning and with anxiety about misinformation, heresy, and information overload; sixteenth-century scholars complained that there were simply too many books to read. And both reshaped institutions in ways their inventors could not have predicted. Gutenberg set out to make a profitable Bible. What he helped create was a world in which ideas could travel faster than any authority could stop them."""
add("ok-essay-01", False, "long_essay", PRESS, "stop",
    "Write an essay (around 1,200 words) about the printing press and its impact on European society.",
    "A long, coherent essay whose paragraphs each cover a different aspect; no loops.")

BUILTINS = [
    ("abs(x)", "Returns the absolute value of a number. For complex numbers it returns the magnitude.", "abs(-7.5)", "7.5"),
    ("all(iterable)", "Returns `True` if every element is truthy, and also `True` for an empty iterable — a frequent source of surprise.", "all([1, 2, 3])", "True"),
    ("any(iterable)", "Returns `True` if at least one element is truthy. It short-circuits, stopping at the first truthy value.", "any([0, '', None, 5])", "True"),
    ("ascii(obj)", "Like `repr()`, but escapes any non-ASCII characters, which is useful when writing to systems that only accept ASCII.", "ascii('café')", "\"'caf\\\\xe9'\""),
    ("bin(x)", "Converts an integer to a binary string prefixed with `0b`.", "bin(10)", "'0b1010'"),
    ("bool(x)", "Converts a value to `True` or `False` using Python's truthiness rules: empty containers, zero and `None` are false.", "bool([])", "False"),
    ("bytes(source)", "Creates an immutable sequence of bytes from an iterable of integers, a string with an encoding, or a size.", "bytes([72, 105])", "b'Hi'"),
    ("callable(obj)", "Tells you whether an object can be called like a function. Classes are callable, and so are instances that define `__call__`.", "callable(len)", "True"),
    ("chr(i)", "Returns the character for a Unicode code point; it is the inverse of `ord()`.", "chr(9731)", "'☃'"),
    ("dict(**kwargs)", "Builds a dictionary from keyword arguments, a mapping, or an iterable of key/value pairs.", "dict(a=1, b=2)", "{'a': 1, 'b': 2}"),
    ("divmod(a, b)", "Returns the quotient and remainder of integer division as a tuple, saving you from computing `//` and `%` separately.", "divmod(17, 5)", "(3, 2)"),
    ("enumerate(iterable, start=0)", "Yields `(index, item)` pairs, which is the idiomatic replacement for `range(len(...))` loops.", "list(enumerate('ab', start=1))", "[(1, 'a'), (2, 'b')]"),
    ("eval(expression)", "Evaluates a string as a Python expression. Never use it on untrusted input; `ast.literal_eval` is the safe alternative for literals.", "eval('2 ** 8')", "256"),
    ("filter(function, iterable)", "Returns an iterator over the items for which the function returns a truthy value.", "list(filter(str.isdigit, ['1', 'a', '22']))", "['1', '22']"),
    ("float(x)", "Converts a number or a numeric string to a floating-point value. It also accepts `'inf'` and `'nan'`.", "float('3.25')", "3.25"),
    ("format(value, spec)", "Applies a format specification, the same mini-language used inside f-strings.", "format(1234567.891, ',.2f')", "'1,234,567.89'"),
    ("frozenset(iterable)", "Creates an immutable set, which, unlike a normal set, can be used as a dictionary key or stored inside another set.", "frozenset('abca') == {'a', 'b', 'c'}", "True"),
    ("getattr(obj, name, default)", "Looks up an attribute by name at runtime, returning `default` if it is missing instead of raising `AttributeError`.", "getattr('x', 'upper')()", "'X'"),
    ("hasattr(obj, name)", "Checks whether an attribute exists; internally it just calls `getattr` and catches `AttributeError`.", "hasattr([], 'append')", "True"),
    ("hash(obj)", "Returns the hash used by dicts and sets. Equal objects must have equal hashes; string hashes change between runs unless `PYTHONHASHSEED` is fixed.", "hash(1) == hash(1.0)", "True"),
    ("hex(x)", "Converts an integer to a lowercase hexadecimal string prefixed with `0x`.", "hex(255)", "'0xff'"),
    ("id(obj)", "Returns an integer that uniquely identifies an object during its lifetime. In CPython it is the memory address.", "id(None) == id(None)", "True"),
    ("input(prompt)", "Reads a line from standard input and returns it without the trailing newline. The result is always a string.", "name = input('Name: ')", "(waits for the user to type)"),
    ("int(x, base=10)", "Converts a string or number to an integer. With `base` you can parse binary, octal or hexadecimal text.", "int('ff', 16)", "255"),
    ("isinstance(obj, classinfo)", "Checks an object's type, including subclasses. You can pass a tuple to test several types at once.", "isinstance(3, (int, float))", "True"),
    ("issubclass(cls, classinfo)", "Checks class relationships rather than instances.", "issubclass(bool, int)", "True"),
    ("iter(obj)", "Returns an iterator. With two arguments, `iter(callable, sentinel)` calls the function until it returns the sentinel — handy for reading fixed-size chunks.", "next(iter([10, 20]))", "10"),
    ("len(s)", "Returns the number of items in a container. It runs in constant time for built-in types.", "len('hello')", "5"),
    ("list(iterable)", "Creates a new list. Calling it on an existing list makes a shallow copy.", "list(range(3))", "[0, 1, 2]"),
    ("map(function, iterable, ...)", "Applies a function to every item and returns a lazy iterator; with several iterables it stops at the shortest.", "list(map(len, ['a', 'bb']))", "[1, 2]"),
    ("max(iterable, key=None)", "Returns the largest item. The `key` argument lets you compare by a derived value, such as length.", "max(['kiwi', 'banana', 'fig'], key=len)", "'banana'"),
    ("min(a, b, ...)", "Returns the smallest of its arguments or of an iterable, and accepts a `default` for empty iterables.", "min([], default=0)", "0"),
    ("next(iterator, default)", "Advances an iterator. Supplying a default avoids a `StopIteration` exception when it is exhausted.", "next(iter([]), 'empty')", "'empty'"),
    ("oct(x)", "Converts an integer to an octal string prefixed with `0o`, the format `chmod` permissions are usually written in.", "oct(493)", "'0o755'"),
    ("open(file, mode='r')", "Opens a file and returns a file object. Always pass `encoding='utf-8'` for text files and use a `with` block so the file is closed.", "open('notes.txt', 'w', encoding='utf-8').write('hi')", "2"),
    ("ord(c)", "Returns the Unicode code point of a single character.", "ord('A')", "65"),
    ("pow(base, exp, mod=None)", "Raises a number to a power; with three arguments it performs fast modular exponentiation, which is essential in cryptography.", "pow(3, 4, 5)", "1"),
    ("print(*objects, sep=' ', end='\\n')", "Writes values to standard output. The `sep`, `end`, and `file` parameters control formatting and destination.", "print('a', 'b', sep='-')", "a-b"),
    ("range(start, stop, step)", "Represents an immutable arithmetic sequence without storing every number, so `range(10**12)` costs almost no memory.", "list(range(0, 10, 3))", "[0, 3, 6, 9]"),
    ("repr(obj)", "Returns the developer-facing representation of an object, ideally one that could recreate it.", "repr('hi')", "\"'hi'\""),
    ("reversed(seq)", "Returns a reverse iterator without copying the sequence.", "list(reversed([1, 2, 3]))", "[3, 2, 1]"),
    ("round(number, ndigits)", "Rounds using banker's rounding (ties go to the even digit), and binary floating point can make results look odd.", "round(2.675, 2)", "2.67"),
    ("set(iterable)", "Creates a mutable set, removing duplicates. Membership tests are on average constant time.", "set([1, 1, 2])", "{1, 2}"),
    ("sorted(iterable, key=None, reverse=False)", "Returns a new sorted list; the sort is stable, so items with equal keys keep their original order.", "sorted('banana')", "['a', 'a', 'a', 'b', 'n', 'n']"),
    ("str(obj)", "Returns the user-facing string form of an object.", "str(3.0)", "'3.0'"),
    ("sum(iterable, start=0)", "Adds up numbers. For floats where precision matters, prefer `math.fsum`.", "sum([1, 2, 3], 10)", "16"),
    ("tuple(iterable)", "Creates an immutable sequence, often used for fixed records and dictionary keys.", "tuple('abc')", "('a', 'b', 'c')"),
    ("type(obj)", "With one argument it returns an object's class; with three arguments it creates a new class dynamically.", "type(3.0)", "<class 'float'>"),
    ("zip(*iterables, strict=False)", "Pairs up items from several iterables. Since Python 3.10, `strict=True` raises an error if the lengths differ.", "list(zip('ab', [1, 2]))", "[('a', 1), ('b', 2)]"),
]
bl = ["# A Practical Tour of Python's Built-in Functions\n",
      "Python ships with a small set of functions that are always available without an import. Knowing them well "
      "pays off quickly: many common tasks that beginners write loops for can be solved with a single built-in, "
      "and the resulting code is both shorter and faster because the built-ins are implemented in C. This guide "
      "walks through the ones you will meet most often, in alphabetical order, with a one-line example for "
      "each. Examples are written as interactive-interpreter sessions, so the line after `>>>` shows the "
      "result.\n"]
for k, (sig, desc, ex, out) in enumerate(BUILTINS):
    bl.append(f"## `{sig}`\n\n{desc}\n\n```python\n>>> {ex}\n{out}\n```\n")
bl.append("""## Putting them together

The real power of the built-ins shows up when you combine them. Suppose you have a list of words and want the three longest, ignoring case and duplicates:

```python
>>> words = ['Apple', 'banana', 'apple', 'Cherry', 'fig', 'banana']
>>> sorted(set(map(str.lower, words)), key=len, reverse=True)[:3]
['banana', 'cherry', 'apple']
```

Here `map` normalizes case, `set` removes duplicates, and `sorted` with a `key` orders by length. Or suppose you need the index of the largest value in a list:

```python
>>> scores = [71, 94, 88, 94, 60]
>>> max(range(len(scores)), key=scores.__getitem__)
1
```

Because `max` returns the first maximal element it encounters, ties resolve to the earliest index.

## Common pitfalls

A few built-ins deserve extra care. `eval` executes arbitrary code, so it should never touch user input. `round` surprises people because of banker's rounding and binary floating point, so use the `decimal` module for money. `sum` is not the right tool for concatenating strings — use `''.join(...)` instead, which is linear rather than quadratic. Finally, remember that `map`, `filter`, `zip`, `reversed` and `enumerate` return lazy iterators: they can only be consumed once, so wrap them in `list()` if you need to iterate twice.

## Where to go next

Once these feel natural, look at the `itertools`, `functools` and `collections` modules. They extend the same ideas — lazy iteration, higher-order functions and specialized containers — and they are just as much a part of writing idiomatic Python as the built-ins themselves.""")
add("ok-essay-02", False, "long_essay", "\n".join(bl), "stop",
    "Write a comprehensive guide to Python's built-in functions with an example for each.",
    "A long reference document with ~50 sections of the same shape, each about a different function.")

NUKE = """Nuclear power is one of the most polarizing topics in energy policy. Supporters see it as an indispensable tool for decarbonizing the grid; critics see it as expensive, slow, and risky. Both sides have a point, and the honest answer depends on what a given country needs and can afford.

**The case for nuclear**

The strongest argument is climate. Over its life cycle, nuclear electricity emits roughly as little carbon dioxide per kilowatt-hour as wind power, and far less than coal or gas. Unlike wind and solar, a nuclear plant produces power around the clock regardless of weather, with capacity factors above 90 percent in well-run fleets. That reliability makes it easier to balance a grid without burning fossil fuels on calm, cloudy evenings.

Nuclear is also remarkably land-efficient. A one-gigawatt reactor occupies a few square kilometers, whereas the equivalent average output from solar panels would need many times that area. And the safety record, measured in deaths per unit of energy, is comparable to wind and solar and vastly better than coal, whose air pollution kills hundreds of thousands of people a year worldwide.

**The case against**

The most practical objection today is cost. Recent projects in Western countries — Vogtle in the United States, Flamanville in France, Hinkley Point C in the United Kingdom — have run years late and billions over budget. Meanwhile the price of solar panels, wind turbines and batteries has fallen dramatically. Money spent on a reactor that will come online in 2035 could arguably cut more emissions sooner if spent on renewables and storage.

Then there is waste. Spent fuel remains dangerously radioactive for thousands of years. The volume is small and has been stored safely so far, but only Finland has nearly completed a permanent deep geological repository, at Onkalo. Many people also remember Chernobyl and Fukushima; even though the death toll from radiation was far smaller than commonly believed, the evacuations were enormously disruptive and expensive.

Finally, there are concerns about proliferation — the same knowledge and some of the same materials can contribute to weapons programs — and about the long timelines for licensing and construction.

**Where that leaves us**

Many energy analysts now argue for a portfolio approach: keep existing reactors running as long as they are safe, since they are already paid for and produce clean power cheaply; build renewables as fast as possible; and treat new nuclear, including small modular reactors, as a promising option that still has to prove it can be built on time and on budget. Countries with limited land, strong engineering institutions and poor wind or solar resources may find the case for new reactors compelling. Others may reasonably decide their money is better spent elsewhere.

In the end, the debate is less about whether nuclear power is "good" or "bad" than about trade-offs between cost, speed, reliability and risk — and those trade-offs look different in Seoul than they do in Sydney."""
add("ok-essay-03", False, "long_essay", NUKE, "stop",
    "Write a balanced essay on the pros and cons of nuclear energy.",
    "A structured, balanced essay with distinct arguments in each section.")

VAX = """Vaccines work by training the immune system to recognize a germ before you ever meet the real thing.

Your immune system has two broad layers. The innate system reacts quickly to anything that looks foreign, but it doesn't remember what it has seen. The adaptive system is slower to start — it can take a week or two — but it is highly specific and, crucially, it has memory. When B cells meet a particular pathogen, some of them become plasma cells that pump out antibodies tailored to it; others become long-lived memory cells. T cells do something similar: helper T cells coordinate the response, and cytotoxic T cells destroy infected cells.

A vaccine shows the adaptive system a harmless "preview" of the pathogen so that this slow first response happens without the danger of real illness. Different vaccine types provide that preview in different ways:

- **Inactivated vaccines** use a killed version of the germ (for example, most flu shots and the polio shot).
- **Live attenuated vaccines** use a weakened germ that can still replicate a little but doesn't cause disease in healthy people (measles, mumps, rubella).
- **Subunit and toxoid vaccines** include only a piece of the germ, such as a surface protein or an inactivated toxin (hepatitis B, tetanus).
- **mRNA vaccines** deliver instructions that let your own cells make a harmless protein from the virus for a short time; the mRNA is broken down within days (several COVID-19 vaccines).
- **Viral vector vaccines** use a different, harmless virus to carry those instructions.

Many vaccines also contain an adjuvant, an ingredient that gets the innate immune system's attention so the adaptive response is stronger.

After vaccination, memory cells stay in the body. If the real pathogen shows up later, they recognize it and launch a fast, strong response — often clearing the infection before you feel sick, or at least making the illness much milder. Some vaccines need boosters because memory fades or because the pathogen changes over time, as influenza does every year.

Finally, vaccines protect communities as well as individuals. When enough people are immune, a germ can't find enough new hosts to keep spreading, which shields people who can't be vaccinated, such as newborns or those undergoing chemotherapy. This is called herd or community immunity, and the threshold needed depends on how contagious the disease is — around 95 percent for measles."""
add("ok-essay-04", False, "long_essay", VAX, "stop",
    "How do vaccines work? Explain it thoroughly but for a non-scientist.",
    "A clear multi-paragraph explanation with a list of distinct vaccine types.")

# ---------------------------------------------------------------- truncated_healthy
STORY = """The lighthouse on Carrick Point had been dark for eleven years when Nora Flynn climbed its stairs with a toolbox in one hand and a thermos of tea in the other.

The council had sold the building to her for one pound and a promise: restore it, or return it. Everyone in the village assumed she would return it. The iron railings had rusted to lace, the lantern room was full of gull feathers, and the keeper's cottage had lost half its roof in the storm of 2009. But Nora had spent thirty years repairing ship engines in Belfast, and she did not believe in things that could not be fixed.

She started with the windows. Each pane had to be measured, cut, and fitted by hand, because nothing in the building was square anymore. It took her most of March. In April she rewired the cottage and discovered, behind a panel in the pantry, a tin box wrapped in oilcloth. Inside were a logbook, a brass key, and a photograph of a girl of about ten standing on the gallery of the lighthouse, squinting into the sun.

The logbook belonged to the last keeper, a man named Eamon Roche. Most of its entries were what she expected: wind direction, visibility, ships sighted, the hours the lamp was lit. But in the final months the handwriting changed. The entries grew shorter and then stopped recording the weather altogether. Instead, on every page, Roche had written a single line: *Still waiting for M.*

Nora asked about him in the village shop. Mrs. Keane, who had run the place since before decimalization, put down the newspaper she was pretending to read.

"Eamon? He kept that light for forty years. Never married. His sister's girl used to come up every summer — Maeve. Clever little thing. She went to Australia with her mother and never came back." She paused. "He kept her room ready, you know. Right up until they took the light off him."

That night Nora sat at the kitchen table with the logbook open and the brass key in her palm. It did not fit any door in the cottage. It did not fit the lantern room or the old oil store. It was only when she went down to the base of the tower to check the new fuse box that she noticed the small iron plate set low in the wall, half-hidden by a century of whitewash, with a keyhole no bigger than her little finger.

The key turned on the second try. Behind the plate was a hollow in the stone, and inside the hollow was a bundle of letters tied with garden twine, every envelope addressed in the same careful hand to Miss Maeve Roche, care of an address in Fremantle, Western Australia. None of them had been posted.

Nora counted them. There were one hundred and thirty-two. The first was dated June 1987; the last, the week before the lighthouse was decommissioned. She did not open them. Instead she sat on the cold step at the foot of the tower, listening to the sea working at the rocks below, and thought about how many years a person could spend keeping a light burning for someone who was never going to see it.

In the morning she drove to the library in Ballina and asked the librarian how one might go about finding a woman who had emigrated to Australia in the late nineteen-eighties. The librarian, a young man with a cardigan and an alarming amount of enthusiasm, spent two hours with her on electoral rolls, newspaper archives and a genealogy site that Nora suspected was not entirely legal. By closing time they had an address in Perth, a phone number, and a 2016 local news article about a retired marine biologist named Maeve Roche-Harding who had"""
add("ok-trunc-01", False, "truncated_healthy", STORY, "length",
    "Write a long short story about a woman restoring an abandoned lighthouse who finds something hidden there.",
    "A coherent, non-repetitive story that simply ran out of tokens mid-sentence.")

INET = """The internet didn't appear all at once; it grew out of several decades of research, policy decisions and happy accidents.

**1960s: Packet switching and ARPANET.** In the early 1960s, Paul Baran at RAND and Donald Davies at the UK's National Physical Laboratory independently proposed breaking messages into small "packets" that could travel separately across a network and be reassembled at the destination. This made networks more robust than circuit-switched telephone lines. The US Defense Department's Advanced Research Projects Agency (ARPA) funded a network based on this idea, and in October 1969 the first message was sent from UCLA to the Stanford Research Institute. The system crashed after two letters — "LO" of "LOGIN".

**1970s: TCP/IP.** As other packet networks appeared, including satellite and radio networks, researchers needed a way to connect different networks together. Vint Cerf and Bob Kahn designed the Transmission Control Protocol, later split into TCP and IP, which let any network carry traffic for any other as long as they agreed on a common packet format. Email, invented by Ray Tomlinson in 1971, quickly became ARPANET's most popular application.

**1980s: The switch-over and DNS.** On January 1, 1983, ARPANET officially switched to TCP/IP, a date often called the internet's birthday. The Domain Name System followed in 1984, replacing a single shared hosts file with a distributed, hierarchical naming scheme, so people could type names like `mit.edu` instead of numeric addresses. In 1986 the National Science Foundation's NSFNET connected university supercomputing centers and became the backbone that most academic traffic used.

**1990s: The Web and commercialization.** At CERN, Tim Berners-Lee proposed the World Wide Web in 1989 and had a working browser and server by the end of 1990. The Web combined three simple ideas — URLs, HTTP and HTML — on top of the existing internet. In 1993 the Mosaic browser, with images displayed inline, made the Web accessible to non-specialists, and NSFNET's restrictions on commercial traffic were lifted in 1995. Netscape's IPO that same year signaled the start of the dot-com boom, and companies like Amazon (1994) and Google (1998) were founded in the following years.

**2000s: Broadband, social media and mobile.** Dial-up gave way to DSL and cable broadband, making streaming audio and video practical. Wikipedia launched in 2001, Facebook in 2004 and YouTube in 2005. The release of the iPhone in 2007 and Android in 2008 moved the internet into people's pockets, and by the end of the decade mobile data was growing faster than"""
add("ok-trunc-02", False, "truncated_healthy", INET, "length",
    "Give me a detailed history of the internet, decade by decade, up to today.",
    "A factual, well-structured history that was cut off by the token limit without any repetition.")

FLASK = """Here's a small but complete Flask app with SQLite, a blueprint for the API, and basic validation:

```python
# app.py
import sqlite3
from datetime import datetime, timezone

from flask import Flask, Blueprint, g, jsonify, request, abort

DATABASE = "notes.db"

api = Blueprint("api", __name__, url_prefix="/api")


def get_db():
    if "db" not in g:
        g.db = sqlite3.connect(DATABASE)
        g.db.row_factory = sqlite3.Row
    return g.db


def close_db(exc=None):
    db = g.pop("db", None)
    if db is not None:
        db.close()


def init_db():
    db = get_db()
    db.execute(
        \"\"\"
        CREATE TABLE IF NOT EXISTS notes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            title TEXT NOT NULL,
            body TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL
        )
        \"\"\"
    )
    db.commit()


def row_to_dict(row):
    return {key: row[key] for key in row.keys()}


@api.get("/notes")
def list_notes():
    limit = min(int(request.args.get("limit", 20)), 100)
    rows = get_db().execute(
        "SELECT * FROM notes ORDER BY created_at DESC LIMIT ?", (limit,)
    ).fetchall()
    return jsonify([row_to_dict(r) for r in rows])


@api.get("/notes/<int:note_id>")
def get_note(note_id):
    row = get_db().execute("SELECT * FROM notes WHERE id = ?", (note_id,)).fetchone()
    if row is None:
        abort(404, description="Note not found")
    return jsonify(row_to_dict(row))


@api.post("/notes")
def create_note():
    data = request.get_json(silent=True) or {}
    title = (data.get("title") or "").strip()
    if not title:
        abort(400, description="'title' is required")
    if len(title) > 200:
        abort(400, description="'title' must be at most 200 characters")
    body = data.get("body", "")
    now = datetime.now(timezone.utc).isoformat()
    db = get_db()
    cur = db.execute(
        "INSERT INTO notes (title, body, created_at) VALUES (?, ?, ?)",
        (title, body, now),
    )
    db.commit()
    return jsonify({"id": cur.lastrowid, "title": title, "body": body, "created_at": now}), 201


@api.delete("/notes/<int:note_id>")
def delete_note(note_id):
    db = get_db()
    cur = db.execute("DELETE FROM notes WHERE id = ?", (note_id,))
    db.commit()
    if cur.rowcount == 0:
        abort(404, description="Note not found")
    return "", 204


def create_app():
    app = Flask(__name__)
    app.register_blueprint(api)
    app.teardown_appcontext(close_db)

    @app.errorhandler(400)
    @app.errorhandler(404)
    def handle_error(err):
        return jsonify({"error": err.description}), err.code

    with app.app_context():
        init_db()
    return app


if __name__ == "__main__":
    create_app().run(debug=True)
```

To try it out:

```bash
pip install flask
python app.py
curl -X POST localhost:5000/api/notes -H 'Content-Type: application/json' \\
     -d '{"title": "Groceries", "body": "eggs, milk"}'
curl localhost:5000/api/notes
```

A few things worth noting about the design:

1. **Connection per request.** `get_db()` stores the connection on Flask's `g` object, so each request reuses one connection and `close_db` closes it when the request ends.
2. **Parameterized queries.** Every query uses `?` placeholders rather than string formatting, which prevents SQL injection.
3. **Consistent errors.** The error handlers turn `abort(...)` calls into JSON responses, so API clients never receive an HTML error page.
4. **Pagination.** `list_notes` caps `limit` at 100 so a client can't accidentally request the entire table. For larger datasets you'd want cursor-based pagination using `created_at` and `id`, because `OFFSET` gets slower as the"""
add("ok-trunc-03", False, "truncated_healthy", FLASK, "length",
    "Write a complete Flask REST API for notes with SQLite, including create, list, get and delete endpoints, "
    "and explain the design.",
    "Complete, varied code and explanation cut off mid-sentence by max tokens; nothing repeats.")

SAT = [("abate", "to become less intense", "The storm began to abate after midnight."),
       ("aberrant", "departing from the norm", "His aberrant behavior worried his teachers."),
       ("abstruse", "difficult to understand", "The lecture on string theory was abstruse."),
       ("acrimony", "bitterness in speech or manner", "The divorce proceedings were full of acrimony."),
       ("admonish", "to warn or reprimand firmly", "The coach admonished the players for arriving late."),
       ("alacrity", "brisk and cheerful readiness", "She accepted the invitation with alacrity."),
       ("ambivalent", "having mixed feelings", "He was ambivalent about moving to a new city."),
       ("ameliorate", "to make something better", "New policies helped ameliorate the housing shortage."),
       ("anachronism", "something out of its proper time", "A wristwatch in a film about Rome is an anachronism."),
       ("antipathy", "a deep-seated dislike", "She felt an instant antipathy toward the new manager."),
       ("arduous", "requiring great effort", "The climb to the summit was long and arduous."),
       ("assuage", "to make an unpleasant feeling less intense", "A warm apology assuaged her anger."),
       ("audacious", "bold, willing to take risks", "It was an audacious plan to cross the desert on foot."),
       ("austere", "severe or strict; plain", "The monks lived in austere cells with a single bed."),
       ("benevolent", "kind and generous", "A benevolent donor paid for the new library."),
       ("bolster", "to support or strengthen", "The good reviews bolstered her confidence."),
       ("cajole", "to persuade by flattery", "He cajoled his sister into lending him the car."),
       ("candor", "the quality of being open and honest", "I appreciated the candor of her feedback."),
       ("capricious", "given to sudden changes of mood", "The capricious weather ruined our picnic plans."),
       ("castigate", "to criticize severely", "The editorial castigated the mayor for the delays."),
       ("censure", "formal disapproval", "The senator faced censure from his own party."),
       ("chicanery", "trickery to achieve a goal", "The election was marred by chicanery."),
       ("coalesce", "to come together to form one whole", "The protest groups coalesced into a single movement."),
       ("cogent", "clear, logical, and convincing", "She made a cogent argument for the new budget."),
       ("complacent", "uncritically satisfied with oneself", "The champions grew complacent and lost the final."),
       ("conciliatory", "intended to placate", "He offered a conciliatory handshake after the debate."),
       ("corroborate", "to confirm or support", "Two witnesses corroborated her account."),
       ("credulous", "too ready to believe things", "Credulous readers shared the fake story widely."),
       ("deference", "humble respect", "Out of deference to her grandmother, she spoke quietly."),
       ("diatribe", "a forceful and bitter verbal attack", "His speech turned into a diatribe against the media."),
       ("diffident", "modest or shy", "The diffident student rarely raised her hand."),
       ("disparage", "to regard or represent as of little worth", "Don't disparage other people's hobbies."),
       ("dogmatic", "inclined to lay down principles as undeniably true", "He was dogmatic about his diet."),
       ("eclectic", "deriving ideas from a broad range of sources", "Her playlist is wonderfully eclectic."),
       ("efficacy", "the ability to produce a desired result", "Trials confirmed the efficacy of the drug."),
       ("elucidate", "to make clear; explain", "The teacher used a diagram to elucidate the concept."),
       ("enervate", "to drain of energy", "The humid heat enervated the hikers.")]
sat_txt = "Here are 100 SAT vocabulary words with definitions and example sentences:\n\n" + "\n\n".join(
    f"{k}. **{w}** — {d}.\n   *{e}*" for k, (w, d, e) in enumerate(SAT, 1)) + "\n\n38. **ephemeral** — lasting for a very sh"
add("ok-trunc-04", False, "truncated_healthy", sat_txt, "length",
    "Give me 100 SAT vocabulary words with definitions and an example sentence for each.",
    "A long list of distinct words that hit the token limit at item 38; truncated but healthy.")

# ---------------------------------------------------------------- multilingual
add("ok-ml-01", False, "multilingual",
    "光合作用是绿色植物利用光能，把二氧化碳和水转化为储存能量的有机物（主要是葡萄糖），并释放出氧气的过程。"
    "这个过程主要发生在叶片细胞的叶绿体中。\n\n光合作用可以分为两个阶段：\n\n"
    "1. **光反应**：在叶绿体的类囊体膜上进行。叶绿素吸收光能，将水分解为氧气和氢离子，同时生成ATP和NADPH。\n"
    "2. **暗反应（卡尔文循环）**：在叶绿体基质中进行。植物利用光反应产生的ATP和NADPH，把二氧化碳固定并还原成葡萄糖等有机物。\n\n"
    "总反应式可以写成：6CO₂ + 6H₂O → C₆H₁₂O₆ + 6O₂（条件：光照、叶绿体）。\n\n"
    "光合作用不仅为植物自身提供能量，也是地球上几乎所有生物的食物和氧气的最终来源。", "stop",
    "请用中文解释一下光合作用的过程。",
    "A correct, well-structured Chinese explanation.")

add("ok-ml-02", False, "multilingual",
    "Вот классический рецепт борща на 6 порций.\n\n**Ингредиенты:**\n- 500 г говядины на кости\n- 2 средние свёклы\n"
    "- 3 картофелины\n- 1/4 кочана капусты\n- 1 морковь\n- 1 луковица\n- 2 ст. л. томатной пасты\n"
    "- 1 ст. л. уксуса или лимонного сока\n- соль, перец, лавровый лист, чеснок, зелень\n\n**Приготовление:**\n"
    "1. Залейте мясо 3 литрами холодной воды, доведите до кипения, снимите пену и варите на слабом огне около 1,5 часа.\n"
    "2. Натрите свёклу на крупной тёрке и потушите её с томатной пастой и уксусом 10–15 минут — так она сохранит яркий цвет.\n"
    "3. Обжарьте нарезанный лук и тёртую морковь на растительном масле до мягкости.\n"
    "4. Выньте мясо, отделите от кости и нарежьте. Положите в бульон нарезанный картофель и варите 10 минут.\n"
    "5. Добавьте нашинкованную капусту, через 5 минут — свёклу и зажарку.\n"
    "6. Верните мясо, посолите, поперчите, добавьте лавровый лист и варите ещё 5–7 минут.\n"
    "7. В конце добавьте измельчённый чеснок и зелень, снимите с огня и дайте борщу настояться 20–30 минут.\n\n"
    "Подавайте со сметаной и чёрным хлебом. Приятного аппетита!", "stop",
    "Дай, пожалуйста, рецепт классического борща.",
    "A complete Russian recipe with distinct steps.")

add("ok-ml-03", False, "multilingual",
    "للقراءة فوائد كثيرة تعود على الفرد والمجتمع، ومن أهمها:\n\n"
    "1. **توسيع المعرفة**: تفتح القراءة أمام الإنسان أبواباً جديدة من العلوم والثقافات والتجارب.\n"
    "2. **تحسين اللغة**: تساعد القراءة المنتظمة على إثراء المفردات وتحسين أسلوب الكتابة والتعبير.\n"
    "3. **تنمية التفكير النقدي**: عندما يقرأ الإنسان آراء مختلفة، يتعلم كيف يقارن بينها ويحللها.\n"
    "4. **تقوية الذاكرة والتركيز**: متابعة الأحداث والشخصيات في الكتب تمرّن الدماغ على التركيز لفترات أطول.\n"
    "5. **تقليل التوتر**: يمكن لقراءة رواية ممتعة أن تكون وسيلة رائعة للاسترخاء والابتعاد عن ضغوط الحياة اليومية.\n\n"
    "لذلك يُنصح بتخصيص وقت يومي للقراءة، ولو كان عشرين دقيقة فقط.", "stop",
    "ما هي فوائد القراءة؟",
    "A coherent Arabic list of distinct benefits.")

add("ok-ml-04", False, "multilingual",
    "件名：自己紹介（営業部・田中）\n\n営業部の皆様\n\nお疲れ様です。本日より営業部に配属されました田中健太と申します。\n\n"
    "前職ではIT企業で約三年間、法人向けの営業を担当しておりました。新しい環境で分からないことも多いかと存じますが、"
    "一日も早く戦力になれるよう努めてまいります。\n\n趣味は登山と料理です。おすすめの山やお店がありましたら、ぜひ教えてください。\n\n"
    "今後ともご指導ご鞭撻のほど、よろしくお願いいたします。\n\n田中 健太\n営業部 内線：1234", "stop",
    "新しい部署に配属されたので、自己紹介のメールを書いてください。名前は田中健太、前職はIT企業の法人営業です。",
    "A natural Japanese self-introduction email.")

add("ok-ml-05", False, "multilingual",
    "El subjuntivo se usa para expresar deseos, dudas, emociones, posibilidades y situaciones que no son hechos "
    "concretos. Algunos casos frecuentes:\n\n1. **Deseos**: *Quiero que vengas a la fiesta.*\n"
    "2. **Emociones**: *Me alegra que estés bien.*\n3. **Duda o negación**: *No creo que llueva mañana.*\n"
    "4. **Recomendaciones**: *Te recomiendo que leas este libro.*\n"
    "5. **Después de ciertas conjunciones**: *Te llamo cuando llegue a casa.* / *Lo explico para que lo entiendas.*\n\n"
    "Una pista útil: si la oración principal expresa algo subjetivo y el sujeto de la segunda oración es distinto, "
    "normalmente necesitas el subjuntivo. Compara *Quiero ir* (mismo sujeto) con *Quiero que vayas* (sujetos distintos).",
    "stop", "¿Cuándo se usa el subjuntivo en español?",
    "A clear Spanish grammar explanation with varied examples.")

# ---------------------------------------------------------------- math_derivation
n = 27
st = []
k = 0
while n != 1:
    k += 1
    if n % 2 == 0:
        st.append(f"Step {k}: {n} is even → {n} ÷ 2 = {n // 2}")
        n //= 2
    else:
        st.append(f"Step {k}: {n} is odd → 3 × {n} + 1 = {3 * n + 1}")
        n = 3 * n + 1
add("ok-math-01", False, "math_derivation",
    "Starting from 27, apply the rule: if n is even, divide by 2; if n is odd, compute 3n + 1.\n\n" + "\n".join(st) +
    f"\n\nThe sequence reaches 1 after {k} steps, peaking at 9232 (step 77). That's why 27 is a famous example: a "
    "small starting number with a surprisingly long, high-flying trajectory.", "stop",
    "Show every step of the Collatz sequence starting from 27.",
    "111 steps share a template but each has a different number; the user asked for every step.")


def euclid(a, b):
    out = []
    while b:
        q, r = divmod(a, b)
        out.append(f"{a} = {q} × {b} + {r}")
        a, b = b, r
    return out, a


e1, g1 = euclid(1071, 462)
e2, g2 = euclid(987654321, 123456789)
add("ok-math-02", False, "math_derivation",
    "Using the Euclidean algorithm, repeatedly divide and keep the remainder:\n\n**gcd(1071, 462)**\n\n" +
    "\n".join(e1) + f"\n\nThe last non-zero remainder is {g1}, so gcd(1071, 462) = {g1}.\n\n"
    "**gcd(987654321, 123456789)**\n\n" + "\n".join(e2) +
    f"\n\nSo gcd(987654321, 123456789) = {g2}. Interesting: 987654321 is almost exactly 8 × 123456789 "
    "(the remainder is just 9).", "stop",
    "Find gcd(1071, 462) and gcd(987654321, 123456789) with the Euclidean algorithm, showing the steps.",
    "Division steps have the same form but different numbers, ending with a correct result.")

add("ok-math-03", False, "math_derivation",
    "**Claim.** For every positive integer n, 1 + 3 + 5 + … + (2n − 1) = n².\n\n"
    "**Base case (n = 1).** The left side is 1 and the right side is 1² = 1, so the claim holds.\n\n"
    "**Inductive step.** Assume the claim holds for some k ≥ 1, i.e.\n\n"
    "1 + 3 + 5 + … + (2k − 1) = k².\n\n"
    "We must show it holds for k + 1. The next odd number is 2(k + 1) − 1 = 2k + 1, so\n\n"
    "1 + 3 + … + (2k − 1) + (2k + 1) = k² + (2k + 1)   (by the inductive hypothesis)\n"
    "= k² + 2k + 1\n= (k + 1)².\n\n"
    "This is exactly the statement for n = k + 1.\n\n"
    "**Conclusion.** By the principle of mathematical induction, the sum of the first n odd numbers equals n² "
    "for all positive integers n. ∎\n\n"
    "A nice picture: each odd number adds an L-shaped border to a square, growing a k × k square into a "
    "(k + 1) × (k + 1) square.", "stop",
    "Prove by induction that the sum of the first n odd numbers is n².",
    "A standard induction proof with a base case, inductive step and conclusion.")

getcontext().prec = 30
x = Decimal(1)
nl = ["Newton's method for √2 solves f(x) = x² − 2 = 0 with the update\n\n"
      "x_{n+1} = x_n − f(x_n)/f'(x_n) = x_n − (x_n² − 2)/(2x_n) = (x_n + 2/x_n) / 2\n\nStarting from x₀ = 1:\n"]
for it in range(1, 6):
    x = (x + Decimal(2) / x) / 2
    nl.append(f"x_{it} = {str(x)[:22]}")
nl.append("\nThe true value is √2 = 1.41421356237309504880…. Notice the quadratic convergence: the number of "
          "correct digits roughly doubles each iteration (1, 3, 6, 12, 24).")
add("ok-math-04", False, "math_derivation", "\n".join(nl), "stop",
    "Use Newton's method to approximate the square root of 2, showing 5 iterations.",
    "Iterations share a form but values converge and the derivation concludes properly.")

add("ok-math-05", False, "math_derivation",
    "Here is the 7 times table up to 20:\n\n" + "\n".join(f"7 × {k} = {7 * k}" for k in range(1, 21)) +
    "\n\nA handy check: the last digits cycle through 7, 4, 1, 8, 5, 2, 9, 6, 3, 0 every ten rows.", "stop",
    "Write out the 7 times table from 1 to 20 for my daughter.",
    "Twenty requested table rows with distinct products.")

add("ok-math-06", False, "math_derivation",
    "Start with the general quadratic equation ax² + bx + c = 0, where a ≠ 0.\n\n"
    "1. Divide every term by a:\n   x² + (b/a)x + c/a = 0\n"
    "2. Move the constant to the right:\n   x² + (b/a)x = −c/a\n"
    "3. Complete the square by adding (b/2a)² to both sides:\n   x² + (b/a)x + (b/2a)² = (b/2a)² − c/a\n"
    "4. The left side is now a perfect square:\n   (x + b/2a)² = b²/4a² − c/a\n"
    "5. Write the right side over a common denominator:\n   (x + b/2a)² = (b² − 4ac) / 4a²\n"
    "6. Take the square root of both sides:\n   x + b/2a = ±√(b² − 4ac) / 2a\n"
    "7. Subtract b/2a:\n   x = (−b ± √(b² − 4ac)) / 2a\n\n"
    "The expression b² − 4ac is the discriminant: if it is positive there are two real roots, if it is zero "
    "there is one repeated root, and if it is negative the roots are complex.", "stop",
    "Derive the quadratic formula by completing the square.",
    "A step-by-step derivation with parallel structure and a proper ending.")

# ---------------------------------------------------------------- config_file
COMPOSE = """```yaml
services:
  web:
    build: ./frontend
    ports:
      - "3000:3000"
    environment:
      - API_URL=http://api:8000
    depends_on:
      - api

  api:
    build: ./backend
    ports:
      - "8000:8000"
    environment:
      - DATABASE_URL=postgresql://app:app@db:5432/app
      - REDIS_URL=redis://cache:6379/0
    depends_on:
      db:
        condition: service_healthy
      cache:
        condition: service_started

  db:
    image: postgres:16
    environment:
      - POSTGRES_USER=app
      - POSTGRES_PASSWORD=app
      - POSTGRES_DB=app
    volumes:
      - pgdata:/var/lib/postgresql/data
    healthcheck:
      test: ["CMD-SHELL", "pg_isready -U app"]
      interval: 5s
      timeout: 3s
      retries: 10

  cache:
    image: redis:7-alpine

  worker:
    build: ./backend
    command: celery -A app.worker worker --loglevel=info
    environment:
      - DATABASE_URL=postgresql://app:app@db:5432/app
      - REDIS_URL=redis://cache:6379/0
    depends_on:
      - api

volumes:
  pgdata:
```

The `api` and `worker` services share an image and environment on purpose: the worker runs the same codebase but starts Celery instead of the web server."""
add("ok-cfg-01", False, "config_file", COMPOSE, "stop",
    "Write a docker-compose.yml for a React frontend, FastAPI backend, Postgres, Redis and a Celery worker.",
    "Similar service blocks and duplicated env vars are intentional in compose files.")

srv = []
for name, port in [("app.example.com", 3000), ("api.example.com", 8000), ("admin.example.com", 5000)]:
    srv.append(f"""server {{
    listen 443 ssl http2;
    server_name {name};

    ssl_certificate     /etc/letsencrypt/live/{name}/fullchain.pem;
    ssl_certificate_key /etc/letsencrypt/live/{name}/privkey.pem;

    location / {{
        proxy_pass http://127.0.0.1:{port};
        proxy_set_header Host $host;
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
    }}
}}""")
NGX = ("Here's an nginx config with one HTTPS server block per subdomain, plus an HTTP→HTTPS redirect:\n\n"
       "```nginx\nserver {\n    listen 80;\n    server_name app.example.com api.example.com admin.example.com;\n"
       "    return 301 https://$host$request_uri;\n}\n\n" + "\n\n".join(srv) +
       "\n```\n\nFor the admin site you may also want `allow 203.0.113.0/24; deny all;` inside its `location` "
       "block to restrict access to your office network.")
add("ok-cfg-02", False, "config_file", NGX, "stop",
    "nginx reverse-proxy config for three subdomains (app on 3000, api on 8000, admin on 5000) with Let's "
    "Encrypt certs and HTTP to HTTPS redirect.",
    "Three near-identical server blocks differ in hostname and port, as the task requires.")

K8SD = """```yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: payments
  labels:
    app: payments
spec:
  replicas: 3
  selector:
    matchLabels:
      app: payments
  template:
    metadata:
      labels:
        app: payments
    spec:
      containers:
        - name: payments
          image: registry.example.com/payments:1.8.2
          ports:
            - containerPort: 8080
          env:
            - name: LOG_LEVEL
              value: "info"
            - name: DB_HOST
              value: "postgres.db.svc.cluster.local"
            - name: DB_PORT
              value: "5432"
            - name: DB_USER
              valueFrom:
                secretKeyRef:
                  name: payments-db
                  key: username
            - name: DB_PASSWORD
              valueFrom:
                secretKeyRef:
                  name: payments-db
                  key: password
            - name: STRIPE_API_KEY
              valueFrom:
                secretKeyRef:
                  name: stripe-credentials
                  key: api-key
          resources:
            requests:
              cpu: "250m"
              memory: "256Mi"
            limits:
              cpu: "1"
              memory: "512Mi"
          readinessProbe:
            httpGet:
              path: /ready
              port: 8080
            periodSeconds: 5
          livenessProbe:
            httpGet:
              path: /healthz
              port: 8080
            initialDelaySeconds: 10
            periodSeconds: 10
```"""
add("ok-cfg-03", False, "config_file", K8SD, "stop",
    "Kubernetes Deployment YAML for a payments service: 3 replicas, env vars with DB creds and Stripe key from "
    "secrets, resource limits, readiness and liveness probes.",
    "Deeply indented YAML with similar env entries, each distinct; a normal manifest.")

# ---------------------------------------------------------------- ui_instructions
add("ok-ui-01", False, "ui_instructions",
    "Installing the Brother printer driver on Windows:\n\n"
    "1. Download the **Full Driver & Software Package** from the Brother support site and double-click it.\n"
    "2. Choose your language and click **OK**.\n"
    "3. On the License Agreement screen, select **I accept** and click **Next**.\n"
    "4. Choose **Wireless Network Connection** and click **Next**.\n"
    "5. Select your printer from the list (it should show its IP address) and click **Next**.\n"
    "6. Leave the recommended components checked and click **Next**.\n"
    "7. Wait for the installation to finish — this can take a few minutes.\n"
    "8. When prompted, choose whether to print a test page, then click **Finish**.\n\n"
    "If the printer doesn't appear in step 5, make sure it's on the same Wi-Fi network as your PC and that "
    "the Wi-Fi light on the printer is steady, not blinking.", "stop",
    "How do I install my Brother printer driver on Windows over Wi-Fi?",
    "'Click Next' recurs in several steps, which is normal for a wizard; steps are distinct.")

add("ok-ui-02", False, "ui_instructions",
    "To set up two-factor authentication on GitHub:\n\n"
    "1. Click your profile photo in the upper-right corner, then click **Settings**.\n"
    "2. In the left sidebar, click **Password and authentication**.\n"
    "3. Under *Two-factor authentication*, click **Enable two-factor authentication**.\n"
    "4. Scan the QR code with an authenticator app such as 1Password, Authy or Google Authenticator.\n"
    "5. Enter the six-digit code from the app and click **Continue**.\n"
    "6. Download your recovery codes and store them somewhere safe — a password manager is ideal.\n"
    "7. Click **I have saved my recovery codes** to finish.\n\n"
    "Optionally, add a passkey or security key as a second method so you're not locked out if you lose your phone.",
    "stop", "How do I turn on 2FA for my GitHub account?",
    "Step-by-step instructions with repeated UI verbs but distinct actions.")

# ============================================================================
# Additional items: long healthy documents, long healthy truncations, short degenerate cases
# ============================================================================
GLOSS = [
    ("Accuracy", "The fraction of predictions a classifier gets right. It can be misleading on imbalanced datasets, where always predicting the majority class may already score very high."),
    ("Activation function", "A nonlinear function applied to a neuron's output, such as ReLU, sigmoid or GELU. Without it, a stack of layers would collapse into a single linear transformation."),
    ("Adam", "An optimizer that combines momentum with per-parameter adaptive learning rates, estimated from running averages of the gradient and its square. It is the default choice for many deep learning tasks."),
    ("Attention", "A mechanism that lets a model weigh different parts of its input when producing each output. In transformers, every token computes how much to attend to every other token using queries, keys and values."),
    ("Autoencoder", "A network trained to reconstruct its input through a narrow bottleneck, forcing it to learn a compressed representation. Variants are used for denoising, anomaly detection and generative modelling."),
    ("Backpropagation", "The algorithm that computes the gradient of the loss with respect to every weight by applying the chain rule backwards through the network, layer by layer."),
    ("Bagging", "Short for bootstrap aggregating: training many models on random resamples of the data and averaging their predictions to reduce variance. Random forests are the best-known example."),
    ("Batch normalization", "A layer that normalizes activations using the mean and variance of the current mini-batch, then rescales them with learned parameters. It often speeds up and stabilizes training."),
    ("Batch size", "The number of examples processed before the model's weights are updated. Larger batches give smoother gradient estimates but need more memory."),
    ("Bias (statistical)", "Error that comes from overly simple assumptions in the model, causing it to miss relevant patterns. High bias leads to underfitting."),
    ("BLEU", "A metric for machine translation that measures n-gram overlap between a generated sentence and one or more reference translations."),
    ("Boosting", "An ensemble technique that trains models sequentially, with each new model focusing on the examples its predecessors got wrong. Gradient boosting libraries such as XGBoost and LightGBM dominate many tabular benchmarks."),
    ("Classification", "A supervised task where the output is a discrete label, such as spam versus not spam, or one of a thousand image categories."),
    ("Clustering", "Grouping unlabelled data points so that points in the same group are more similar to each other than to those in other groups. K-means and DBSCAN are common algorithms."),
    ("Confusion matrix", "A table that counts true positives, false positives, true negatives and false negatives, showing exactly which classes a model confuses with which."),
    ("Convolutional neural network (CNN)", "A network that slides small learned filters across its input, sharing weights across positions. CNNs excel at images because they exploit local spatial structure."),
    ("Cross-entropy", "The standard loss for classification. It measures how far the predicted probability distribution is from the true one and heavily penalizes confident wrong answers."),
    ("Cross-validation", "A way to estimate generalization by splitting the data into k folds, training on k−1 of them and testing on the remaining one, then rotating and averaging the scores."),
    ("Data augmentation", "Creating modified copies of training examples — flipped or cropped images, paraphrased sentences, pitch-shifted audio — to make models more robust."),
    ("Data leakage", "When information from outside the training set, often from the test set or from the future, sneaks into training and produces evaluation scores that are unrealistically good."),
    ("Decision tree", "A model that predicts by asking a sequence of yes/no questions about the features. Trees are easy to interpret but overfit easily on their own."),
    ("Diffusion model", "A generative model that learns to reverse a gradual noising process. Starting from pure noise, it denoises step by step to produce images, audio or other data."),
    ("Dimensionality reduction", "Techniques such as PCA, t-SNE and UMAP that represent high-dimensional data with fewer variables, either for visualization or to strip out noise."),
    ("Dropout", "A regularization method that randomly zeroes a fraction of activations during training, which prevents units from co-adapting too much."),
    ("Embedding", "A dense vector representation of a discrete item — a word, a product, a user — learned so that similar items end up close together."),
    ("Epoch", "One full pass through the training dataset."),
    ("F1 score", "The harmonic mean of precision and recall. It is useful when both false positives and false negatives matter and the classes are imbalanced."),
    ("Feature engineering", "Creating informative input variables from raw data, for example extracting the day of the week from a timestamp or the domain from an email address."),
    ("Fine-tuning", "Continuing to train a pretrained model on a smaller, task-specific dataset, usually with a lower learning rate."),
    ("Generalization", "How well a model performs on new data it has not seen during training, which is what ultimately matters in practice."),
    ("Generative adversarial network (GAN)", "Two networks trained against each other: a generator that creates samples and a discriminator that tries to tell them apart from real data."),
    ("Gradient descent", "An optimization algorithm that repeatedly moves the parameters a small step in the direction that most reduces the loss."),
    ("Gradient clipping", "Capping the size of gradients during training to prevent exploding gradients, especially in recurrent networks and very deep transformers."),
    ("Hallucination", "When a language model produces fluent but false or unsupported content, such as a citation to a paper that does not exist."),
    ("Hyperparameter", "A setting chosen before training rather than learned from data, such as the learning rate, the number of layers or the regularization strength."),
    ("Inference", "Using a trained model to make predictions on new inputs. In production, inference cost and latency often matter more than training cost."),
    ("k-nearest neighbours", "A simple method that predicts a label from the k most similar training examples. It needs no training phase but can be slow at prediction time."),
    ("Knowledge distillation", "Training a small student model to imitate the outputs of a larger teacher model, keeping much of the accuracy at a fraction of the cost."),
    ("Label smoothing", "Replacing hard one-hot targets with slightly softened ones, which discourages overconfident predictions and can improve calibration."),
    ("Large language model (LLM)", "A transformer trained on vast amounts of text to predict the next token. After instruction tuning, such models can follow prompts and hold conversations."),
    ("Learning rate", "The step size used when updating weights. Too high and training diverges; too low and it crawls. Warmup followed by cosine decay is a popular schedule."),
    ("Logistic regression", "A linear model for binary classification that passes a weighted sum of features through the sigmoid function to produce a probability."),
    ("Loss function", "The quantity a model is trained to minimize; it measures how far the predictions are from the targets."),
    ("LSTM", "Long short-term memory, a recurrent architecture whose gates control what to remember and what to forget, designed to capture long-range dependencies."),
    ("Mixture of experts", "An architecture in which a router sends each token to a few specialized sub-networks, increasing capacity without a proportional increase in computation."),
    ("Momentum", "An optimizer feature that keeps a moving average of past gradients, helping the model move faster along consistent directions and damping oscillations."),
    ("Naive Bayes", "A probabilistic classifier that assumes the features are independent given the class. Despite that unrealistic assumption, it works surprisingly well for text."),
    ("Normalization", "Scaling input features to a common range or distribution so that no single feature dominates merely because of its units."),
    ("One-hot encoding", "Representing a categorical variable as a vector with a single 1 and zeros everywhere else."),
    ("Overfitting", "When a model learns the noise and quirks of the training data so well that it performs poorly on new data."),
    ("Perplexity", "A measure of how well a language model predicts text; lower is better. It is the exponential of the average cross-entropy per token."),
    ("Precision", "Of all the items the model labelled positive, the fraction that really were positive."),
    ("Principal component analysis (PCA)", "A linear technique that finds the orthogonal directions of greatest variance in the data and projects onto the first few of them."),
    ("Quantization", "Storing weights and activations with fewer bits — for example 8-bit integers instead of 32-bit floats — to cut memory use and speed up inference."),
    ("Random forest", "An ensemble of decision trees, each trained on a bootstrap sample with a random subset of features, whose votes are combined."),
    ("Recall", "Of all the actual positives, the fraction the model managed to find."),
    ("Regularization", "Any technique that discourages overly complex models, such as L2 weight penalties, dropout or early stopping."),
    ("Reinforcement learning", "Learning by trial and error: an agent takes actions in an environment and adjusts its policy to maximize cumulative reward."),
    ("RLHF", "Reinforcement learning from human feedback. A reward model trained on human preference comparisons is used to fine-tune a language model's behaviour."),
    ("ROC curve", "A plot of true positive rate against false positive rate across classification thresholds. The area under it, AUC, summarizes how well the model ranks positives above negatives."),
    ("Sampling temperature", "A parameter that sharpens or flattens a language model's output distribution. Low temperatures give predictable text; high ones give more varied and more error-prone text."),
    ("Self-supervised learning", "Training on labels derived automatically from the data itself, such as predicting masked words, which lets models learn from huge unlabelled corpora."),
    ("Softmax", "A function that turns a vector of scores into a probability distribution by exponentiating each score and normalizing by the sum."),
    ("Stochastic gradient descent (SGD)", "Gradient descent that estimates the gradient from a small random mini-batch rather than the whole dataset, trading accuracy per step for many more steps."),
    ("Support vector machine (SVM)", "A classifier that finds the boundary with the largest margin between classes, optionally in a higher-dimensional space via the kernel trick."),
    ("Tokenization", "Splitting text into the units a model processes. Modern LLMs use subword schemes such as byte-pair encoding, so rare words are broken into pieces."),
    ("Transfer learning", "Reusing what a model learned on one task to do better on another, typically by fine-tuning a pretrained network."),
    ("Transformer", "The architecture behind modern language models, built from stacked self-attention and feed-forward layers. It processes all tokens of a sequence in parallel during training."),
    ("Underfitting", "When a model is too simple to capture the underlying pattern and performs poorly even on its training data."),
    ("Validation set", "Data held out from training and used to tune hyperparameters and decide when to stop, kept separate from the final test set."),
    ("Vanishing gradient", "When gradients shrink as they flow backwards through many layers, so early layers barely learn. Residual connections and careful initialization help."),
    ("Variance (statistical)", "Error caused by sensitivity to small fluctuations in the training data. High variance leads to overfitting."),
    ("Weight decay", "A regularization technique that shrinks every weight slightly at each step; for plain SGD it is equivalent to an L2 penalty."),
    ("Word2vec", "An early method for learning word embeddings by predicting a word from its neighbours, or the neighbours from the word."),
    ("Zero-shot learning", "Performing a task without any task-specific training examples, relying only on instructions or general knowledge."),
]
gl = ["# Machine Learning Glossary (A–Z)\n",
      "This glossary covers the terms you're most likely to meet in courses, papers and job interviews. "
      "Definitions are deliberately short; follow-up reading is suggested at the end.\n"]
cur = ""
for term, d in GLOSS:
    if term[0].upper() != cur:
        cur = term[0].upper()
        gl.append(f"\n## {cur}\n")
    gl.append(f"**{term}** — {d}\n")
gl.append("\n---\n\n**Further reading:** *Deep Learning* by Goodfellow, Bengio and Courville for the theory; "
          "*Hands-On Machine Learning* by Aurélien Géron for practical examples; and the scikit-learn user guide, "
          "which is one of the clearest free introductions to classical methods.")
add("ok-essay-05", False, "long_essay", "\n".join(gl), "stop",
    "Write an A–Z glossary of machine learning terms with short definitions, for a study guide.",
    "A long glossary of ~75 distinct terms; repeated 'term — definition' structure is expected.")

# long healthy sample log, cut by max tokens
rng = random.Random(2024)
LOGT = [
    (30, lambda: f"INFO  [http-nio-8080-exec-{rng.randint(1, 40)}] c.e.shop.api.ProductController - GET /api/products/{rng.randint(1000, 9999)} 200 {rng.randint(4, 60)}ms"),
    (12, lambda: f"INFO  [http-nio-8080-exec-{rng.randint(1, 40)}] c.e.shop.api.OrderController - POST /api/orders 201 {rng.randint(40, 300)}ms user={rng.randint(10000, 99999)}"),
    (8, lambda: f"INFO  [payment-worker-{rng.randint(1, 4)}] c.e.shop.payments.StripeClient - Charge succeeded for order {rng.randint(580000, 589999)} amount={rng.randint(5, 400)}.{rng.randint(0, 99):02d} EUR"),
    (2, lambda: f"ERROR [payment-worker-{rng.randint(1, 4)}] c.e.shop.payments.StripeClient - Charge failed for order {rng.randint(580000, 589999)}: {rng.choice(['card_declined', 'insufficient_funds', 'expired_card'])}"),
    (6, lambda: f"INFO  [mail-sender] c.e.shop.mail.Mailer - Sent order confirmation to {rng.choice(['a.moreau', 'j.smith', 'k.tanaka', 'l.garcia', 'p.novak', 'r.okafor', 's.ivanova', 't.brown'])}@{rng.choice(['gmail.com', 'outlook.com', 'web.de', 'proton.me'])}"),
    (3, lambda: f"WARN  [http-nio-8080-exec-{rng.randint(1, 40)}] c.e.shop.security.JwtFilter - Rejected expired token from {rng.randint(1, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"),
    (4, lambda: f"DEBUG [scheduler-1] c.e.shop.jobs.InventorySync - Synced {rng.randint(20, 900)} SKUs from warehouse {rng.choice(['BER-1', 'MAD-2', 'WAW-1'])} in {rng.randint(200, 3000)}ms"),
    (3, lambda: (lambda a: f"INFO  [gc] G1 Young Generation pause {rng.randint(3, 45)}ms, heap {a}M->{a - rng.randint(200, 800)}M(4096M)")(rng.randint(1500, 3800))),
    (2, lambda: f"INFO  [cache-evictor] c.e.shop.cache.ProductCache - Evicted {rng.randint(10, 400)} stale entries (size now {rng.randint(8000, 12000)})"),
    (1, lambda: f"WARN  [HikariPool-1 housekeeper] com.zaxxer.hikari.pool.HikariPool - HikariPool-1 - Thread starvation or clock leap detected (housekeeper delta={rng.randint(61, 95)}s)."),
]
weights = [w for w, _ in LOGT]
lines_ = []
ms = 0
for k in range(400):
    ms += rng.randint(5, 2500)
    hh, rem = divmod(ms // 1000, 3600)
    mm, ss = divmod(rem, 60)
    ts = f"2024-06-11 {13 + hh:02d}:{mm:02d}:{ss:02d}.{ms % 1000:03d}"
    gen = rng.choices(LOGT, weights=weights)[0][1]
    lines_.append(f"{ts} {gen()}")
log_txt = ("Here's a 500-line sample of a Spring Boot e-commerce service log with a realistic mix of traffic, "
           "payments, background jobs and GC events:\n\n```\n" + "\n".join(lines_))
add("ok-trunc-05", False, "truncated_healthy", cut(log_txt, 19000), "length",
    "Generate a realistic 500-line application log from a Java e-commerce service so I can test my log "
    "parser. Include some warnings and errors.",
    "A long, varied, requested log cut off by the token limit; lines share formats but not content.")

# long healthy CSV, cut by max tokens
rng = random.Random(77)
PRODS2 = [("Espresso beans 1kg", 18.90), ("Ceramic pour-over", 24.00), ("Burr grinder", 129.00),
          ("Milk frother", 39.50), ("Glass carafe", 21.00), ("Paper filters x100", 4.99),
          ("Gooseneck kettle", 64.00), ("Travel mug", 17.50), ("Decaf beans 500g", 11.20), ("Scale 0.1g", 29.90)]
COUNTRIES = ["DE", "FR", "NL", "ES", "IT", "AT", "BE", "PL", "SE", "DK"]
rows = ["order_id,order_date,customer_id,country,product,quantity,unit_price_eur,total_eur"]
day = 0
for k in range(400):
    if rng.random() < 0.3:
        day += 1
    d = f"2024-{1 + day // 28:02d}-{1 + day % 28:02d}"
    pr, price = rng.choice(PRODS2)
    q = rng.choice([1, 1, 1, 2, 2, 3])
    rows.append(f"{100230 + k},{d},C{rng.randint(1000, 4999)},{rng.choice(COUNTRIES)},{pr},{q},{price:.2f},{q * price:.2f}")
add("ok-trunc-06", False, "truncated_healthy", cut("```csv\n" + "\n".join(rows), 16000, midword=False), "length",
    "Generate 1000 rows of realistic order data for a coffee equipment web shop as CSV (order id, date, customer, "
    "country, product, quantity, unit price, total).",
    "Hundreds of distinct CSV rows, cut off by max tokens before reaching the requested 1000.")

ITALY = """Here's a relaxed 10-day Italy itinerary that balances big sights with slower afternoons:

**Day 1 – Arrive in Rome**
Check into a hotel near Campo de' Fiori so you can walk almost everywhere. Don't schedule anything major; instead, cross the river in the early evening and wander Trastevere's ivy-covered lanes. Have dinner at a trattoria and order cacio e pepe — it's simpler and better than it sounds.

**Day 2 – Ancient Rome**
Book a timed entry for the Colosseum at 9:00 and continue straight into the Roman Forum and Palatine Hill, which are included in the same ticket. Bring water; there is little shade. After lunch, rest at the hotel, then head out around 17:00 to see the Pantheon, Piazza Navona and the Trevi Fountain when the light is golden.

**Day 3 – The Vatican**
Arrive at the Vatican Museums at opening time, or book an early-access tour, to see the Sistine Chapel before the crowds. Afterwards, visit St. Peter's Basilica and climb the dome for the best view in the city. In the evening, take a short taxi to Testaccio for a food tour or dinner at one of the neighborhood's old-school restaurants.

**Day 4 – Train to Florence**
The Frecciarossa high-speed train takes about 1 hour 35 minutes. Drop your bags, then visit the Duomo complex; climbing Brunelleschi's dome requires a reservation, so book it in advance. End the day at Piazzale Michelangelo for sunset over the terracotta rooftops.

**Day 5 – Florence's art**
Spend the morning at the Uffizi (again, reserve a time slot) and see Botticelli's *Birth of Venus*. Cross the Ponte Vecchio into the Oltrarno, where artisans still work leather, paper and gold, and have a long lunch. If you still have energy, stroll through the Boboli Gardens behind the Pitti Palace.

**Day 6 – Siena and San Gimignano**
Rent a car or join a small-group tour for a day in the Tuscan countryside. Start in Siena, whose shell-shaped Piazza del Campo hosts the Palio horse race each summer, and step inside the striped cathedral. In the afternoon, drive to San Gimignano, the medieval "Manhattan of Tuscany," and taste the local Vernaccia white wine before heading back to Florence along the"""
add("ok-trunc-07", False, "truncated_healthy", ITALY, "length",
    "Plan a detailed 10-day trip to Italy (Rome, Florence, Tuscany, Venice, Cinque Terre) with daily plans.",
    "A detailed itinerary cut mid-sentence on day 6 by the token limit; no repetition.")

# long healthy JSON
rng = random.Random(5150)
FN = ["Ana", "Bilal", "Camille", "Daniel", "Eva", "Farid", "Greta", "Hugo", "Ines", "Jakub", "Kerstin", "Luca",
      "Maya", "Nils", "Olga", "Pedro", "Rania", "Stefan", "Tove", "Umar"]
LN = ["Almeida", "Becker", "Costa", "Dubois", "Eriksen", "Fontaine", "Gallo", "Horvath", "Iversen", "Jansen",
      "Kowalski", "Lindqvist", "Marino", "Nowak", "Olsen", "Pires", "Quist", "Richter", "Santos", "Torres"]
DEPT = {"Engineering": ["Backend Engineer", "Frontend Engineer", "SRE", "Engineering Manager", "QA Engineer"],
        "Sales": ["Account Executive", "Sales Development Rep", "Sales Manager"],
        "Marketing": ["Content Marketer", "Growth Analyst", "Brand Designer"],
        "Finance": ["Accountant", "Financial Analyst", "Controller"],
        "People": ["Recruiter", "HR Business Partner"]}
OFF = ["Lisbon", "Berlin", "Paris", "Stockholm", "Warsaw", "Remote"]
emps = []
used = set()
while len(emps) < 45:
    f_, l_ = rng.choice(FN), rng.choice(LN)
    if (f_, l_) in used:
        continue
    used.add((f_, l_))
    dept = rng.choice(list(DEPT))
    emps.append({"employee_id": f"E{2000 + len(emps) * 3 + rng.randint(0, 2)}", "name": f"{f_} {l_}",
                 "email": f"{f_.lower()}.{l_.lower()}@northwind.example", "department": dept,
                 "title": rng.choice(DEPT[dept]), "office": rng.choice(OFF),
                 "start_date": f"{rng.randint(2015, 2024)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                 "salary_eur": rng.randrange(38000, 125000, 500)})
add("ok-json-04", False, "json_array", "```json\n" + json.dumps(emps, indent=2) + "\n```\n\nAll names, emails and "
    "salaries are fictional.", "stop",
    "Create mock data: a JSON array of 45 employees with id, name, email, department, title, office, start date "
    "and salary.",
    "45 distinct employee objects; a long but healthy requested JSON array.")

# short degenerate cases
add("deg-user-05", True, "invented_user_turn",
    "The capital of France is Paris.\nUser: what about germany\nAssistant: The capital of Germany is Berlin.\n"
    "User: and italy",
    "stop", "capital of france?",
    "A one-line answer followed immediately by invented 'User:' turns.")

add("deg-tok-08", True, "token_loop",
    "Sure" + ", sure" * 40 + ",",
    "length", "Can you proofread my essay if I paste it here?",
    "A single word loops dozens of times instead of a reply.")

add("deg-list-05", True, "list_item_repeat",
    "Synonyms for \"big\":\n- large\n- huge\n- enormous\n- large\n- huge\n- enormous\n- large\n- huge\n"
    "- enormous\n- large\n- huge\n- enormous\n- large\n- huge\n- enormous\n- large\n- huge\n- enormous\n- large\n- hu",
    "length", "Give me synonyms for 'big'.",
    "A short list of three synonyms cycles verbatim until cut off.")

# ============================================================================
# Write + summary
# ============================================================================
ids = [it["id"] for it in ITEMS]
assert len(ids) == len(set(ids)), "duplicate ids"
for it in ITEMS:
    assert it["finish_reason"] in ("stop", "length")
    assert isinstance(it["label"], bool)

with open(OUT, "w", encoding="utf-8") as f:
    for it in ITEMS:
        f.write(json.dumps(it, ensure_ascii=False) + "\n")

by = defaultdict(Counter)
for it in ITEMS:
    by[it["label"]][it["category"]] += 1
n_true = sum(by[True].values())
n_false = sum(by[False].values())
print(f"wrote {len(ITEMS)} items to {OUT}")
print(f"degenerate (true): {n_true} ({100 * n_true / len(ITEMS):.1f}%) in {len(by[True])} categories")
print(f"healthy   (false): {n_false} ({100 * n_false / len(ITEMS):.1f}%) in {len(by[False])} categories")
for lab in (True, False):
    print(f"\nlabel={lab}")
    for cat, cnt in sorted(by[lab].items()):
        print(f"  {cat:24s} {cnt}")
wc = sorted(len(it["text"].split()) for it in ITEMS)
print(f"\nword counts: min={wc[0]} median={wc[len(wc) // 2]} max={wc[-1]}")
fr = Counter((it["label"], it["finish_reason"]) for it in ITEMS)
print("finish_reason by label:", dict(fr))
