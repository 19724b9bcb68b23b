/*
** stopwords.c — the function words of each language the analyser knows
** (DECISIONS 015): articles, pronouns, prepositions, conjunctions, the
** forms of "to be" and "to have", and question words.
**
** Our own short lists, guided by the Snowball ones: roughly the hundred most
** frequent function words of each language, no more. A list is only ever
** applied to text detected as its language (analyze.c), so a word belongs
** here when it is noise in THIS language, whatever it means elsewhere: the
** Italian "so" (I know) and "can" (dog) are safe, because the English list
** never touches Italian text.
**
** Words are written as a speaker would, accents included; analyze.c folds
** them exactly as it folds text (NFKC, case fold, marks stripped), so
** "perché" also matches a query typed as "perche". Elided forms ("dell'",
** "qu'") appear without their apostrophe, as the tokenizer leaves them.
*/
#include <stddef.h>

#include "rank/analyze.h"

static const char *const en[] = {
	"a", "about", "above", "after", "again", "against", "all", "am", "an", "and",
	"any", "are", "as", "at", "be", "because", "been", "before", "being", "below",
	"between", "both", "but", "by", "can", "could", "did", "do", "does", "doing",
	"down", "during", "each", "few", "for", "from", "further", "had", "has", "have",
	"having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how",
	"i", "if", "in", "into", "is", "it", "its", "itself", "just", "ll", "me", "more",
	"most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once",
	"only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same",
	"she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs",
	"them", "themselves", "then", "there", "these", "they", "this", "those",
	"through", "to", "too", "under", "until", "up", "very", "was", "we", "were",
	"what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
	"would", "you", "your", "yours", "yourself", "yourselves", "ve", "re", "must",
	"might", "shall", NULL
};

static const char *const it[] = {
	"a", "ad", "agli", "ai", "al", "all", "alla", "alle", "allo", "anche", "avere",
	"aveva", "avevano", "c", "che", "chi", "ci", "come", "con", "contro", "cosa",
	"cui", "da", "dagli", "dai", "dal", "dall", "dalla", "dalle", "dallo", "degli",
	"dei", "del", "dell", "della", "delle", "dello", "di", "dov", "dove", "e", "è",
	"ed", "era", "erano", "essere", "gli", "ha", "hai", "hanno", "ho", "i", "il",
	"in", "io", "l", "la", "le", "lei", "li", "lo", "loro", "lui", "ma", "mi", "mia",
	"mie", "miei", "mio", "ne", "negli", "nei", "nel", "nell", "nella", "nelle",
	"nello", "noi", "non", "nostra", "nostre", "nostri", "nostro", "o", "per",
	"perché", "più", "qual", "quale", "quali", "quando", "quanto", "quella",
	"quelle", "quelli", "quello", "questa", "queste", "questi", "questo", "se",
	"sei", "si", "sia", "siamo", "siete", "sono", "sta", "stata", "stato", "su",
	"sua", "sue", "sugli", "sui", "sul", "sull", "sulla", "sulle", "suo", "suoi",
	"ti", "tra", "fra", "tu", "tua", "tue", "tuo", "tuoi", "un", "una", "uno",
	"vi", "voi", "vostra", "vostro", NULL
};

static const char *const es[] = {
	"a", "al", "algo", "algunos", "ante", "antes", "como", "cómo", "con", "contra",
	"cual", "cuál", "cuando", "cuándo", "de", "del", "desde", "donde", "dónde",
	"durante", "e", "el", "él", "ella", "ellas", "ellos", "en", "entre", "era",
	"es", "esa", "ese", "eso", "esta", "está", "estaba", "están", "estar", "estas",
	"este", "esto", "estos", "fue", "ha", "han", "hay", "he", "hemos", "la", "las",
	"le", "les", "lo", "los", "me", "mi", "mis", "mucho", "muy", "más", "nada",
	"ni", "no", "nos", "nosotros", "o", "os", "otra", "otro", "para", "pero",
	"poco", "por", "porque", "qué", "que", "quien", "quién", "quienes", "se",
	"sea", "ser", "si", "sí", "sin", "sobre", "son", "su", "sus", "también",
	"tanto", "te", "ti", "tiene", "tienen", "todo", "todos", "tu", "tus", "tú",
	"un", "una", "uno", "unos", "vosotros", "y", "ya", "yo", NULL
};

static const char *const fr[] = {
	"à", "ai", "as", "au", "aux", "avec", "avez", "avoir", "avons", "c", "ce",
	"ces", "cet", "cette", "combien", "comment", "d", "dans", "de", "des", "du",
	"elle", "elles", "en", "est", "et", "été", "être", "eu", "eux", "il", "ils",
	"j", "je", "l", "la", "le", "les", "leur", "leurs", "lui", "m", "ma", "mais",
	"me", "même", "mes", "moi", "mon", "n", "ne", "nos", "notre", "nous", "on",
	"ont", "ou", "où", "par", "pas", "pour", "pourquoi", "qu", "quand", "que",
	"quel", "quelle", "quelles", "quels", "qui", "s", "sa", "sans", "se", "ses",
	"son", "sont", "sur", "t", "ta", "te", "tes", "toi", "ton", "tu", "un", "une",
	"vos", "votre", "vous", "y", "était", "étaient", "suis", "es", "sommes",
	"êtes", "fait", "sera", "a", "ceci", "cela", "ça", "très", "aussi", NULL
};

static const char *const de[] = {
	"aber", "alle", "allem", "allen", "aller", "alles", "als", "also", "am", "an",
	"auch", "auf", "aus", "bei", "bin", "bis", "bist", "da", "damit", "dann", "das",
	"dass", "daß", "dem", "den", "der", "des", "dich", "die", "dies", "diese",
	"diesem", "diesen", "dieser", "dieses", "dir", "doch", "dort", "du", "durch",
	"ein", "eine", "einem", "einen", "einer", "eines", "er", "es", "euch", "euer",
	"für", "gegen", "hat", "hatte", "hatten", "hier", "ich", "ihm", "ihn", "ihnen",
	"ihr", "ihre", "ihrem", "ihren", "ihrer", "im", "in", "ist", "ja", "jede",
	"jedem", "jeden", "jeder", "kann", "kein", "keine", "man", "mein", "meine",
	"meinem", "meinen", "meiner", "mich", "mir", "mit", "nach", "nicht", "noch",
	"nun", "nur", "ob", "oder", "ohne", "sehr", "sein", "seine", "seinem",
	"seinen", "seiner", "sich", "sie", "sind", "so", "über", "um", "und", "uns",
	"unser", "unter", "vom", "von", "vor", "war", "waren", "warum", "was", "welche",
	"welcher", "welches", "wenn", "wer", "werden", "wie", "wir", "wird", "wo",
	"wann", "woher", "wohin", "zu", "zum", "zur", "haben", "habe", "hast", "muss",
	"musste", "müssen", "soll", "sollte", "will", "wollte", "würde", "würden",
	"können", "könnte", "etwas", "nichts", "schon", "weil", "wieder", NULL
};

static const char *const pt[] = {
	"a", "à", "ao", "aos", "as", "às", "até", "com", "como", "da", "das", "de",
	"dela", "dele", "deles", "depois", "do", "dos", "e", "é", "ela", "elas", "ele",
	"eles", "em", "entre", "era", "essa", "esse", "esta", "está", "estão", "este",
	"eu", "foi", "foram", "há", "isso", "isto", "já", "lhe", "lhes", "mais", "mas",
	"me", "mesmo", "meu", "meus", "minha", "minhas", "muito", "na", "nas", "nem",
	"no", "nos", "nós", "nossa", "nosso", "não", "num", "numa", "o", "onde", "os",
	"ou", "para", "pela", "pelas", "pelo", "pelos", "por", "porque", "qual",
	"quando", "que", "quem", "se", "seja", "sem", "ser", "seu", "seus", "só",
	"sua", "suas", "são", "também", "te", "tem", "têm", "tinha", "tu", "tua",
	"teu", "um", "uma", "você", "vocês", "vos", "estou", "sou", NULL
};

static const char *const nl[] = {
	"aan", "al", "alles", "als", "altijd", "andere", "ben", "bij", "dan", "dat",
	"de", "der", "deze", "die", "dit", "doch", "doen", "door", "dus", "een",
	"eens", "en", "er", "ge", "geen", "geweest", "haar", "had", "heb", "hebben",
	"heeft", "hem", "het", "hier", "hij", "hoe", "hun", "iemand", "iets", "ik",
	"in", "is", "ja", "je", "jij", "kan", "kon", "kunnen", "maar", "me", "meer",
	"men", "met", "mij", "mijn", "moet", "na", "naar", "niet", "niets", "nog", "nu",
	"of", "om", "omdat", "ons", "onze", "ook", "op", "over", "reeds", "te", "tegen",
	"toch", "toen", "tot", "u", "uit", "uw", "van", "veel", "voor", "waar",
	"wanneer", "want", "waren", "was", "wat", "we", "welke", "werd", "wie", "wij",
	"wil", "worden", "wordt", "zal", "ze", "zei", "zelf", "zich", "zij", "zijn",
	"zo", "zonder", "zou", NULL
};

static const char *const ru[] = {
	"а", "без", "более", "бы", "был", "была", "были", "было", "быть", "в", "вам",
	"вас", "весь", "во", "вот", "все", "всё", "всего", "всех", "вы", "где", "да",
	"даже", "для", "до", "его", "ее", "её", "если", "есть", "еще", "ещё", "же",
	"за", "здесь", "и", "из", "или", "им", "их", "к", "как", "какой", "когда",
	"кто", "куда", "ли", "мне", "много", "может", "мой", "моя", "мы", "на", "над",
	"надо", "нас", "не", "него", "нее", "неё", "нет", "ни", "них", "но", "ну", "о",
	"об", "он", "она", "они", "оно", "от", "очень", "по", "под", "после", "при",
	"про", "с", "сам", "себе", "себя", "со", "так", "также", "там", "тебя", "тем",
	"то", "того", "тоже", "только", "том", "ты", "у", "уже", "чем", "что", "чтобы",
	"эта", "эти", "это", "этот", "я", "ему", "ей", "мой", "свой", "своя", "почему",
	"зачем", "сколько", "который", "которая", "которые", NULL
};

const char *const *a2m_stopwords(int lang)
{
	switch (lang) {
	case A2M_LANG_EN: return en;
	case A2M_LANG_IT: return it;
	case A2M_LANG_ES: return es;
	case A2M_LANG_FR: return fr;
	case A2M_LANG_DE: return de;
	case A2M_LANG_PT: return pt;
	case A2M_LANG_NL: return nl;
	case A2M_LANG_RU: return ru;
	default:          return NULL;
	}
}
