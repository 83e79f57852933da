using System.Globalization;
using System.Text.RegularExpressions;
using Serverlab.Contract;
using Serverlab.Contract.Tests;

namespace Serverlab.Stacks.Tests;

/// <summary>
/// Every C# stack (a folder <c>servers/NAME/</c> with a <c>*.csproj</c>, folders
/// starting with <c>_</c> left out) says in its <c>Program.cs</c> the display name and
/// port its <c>server.toml</c> declares, by the convention
/// <c>const string DisplayName = "...";</c> and <c>const int DefaultPort = ...;</c>.
/// </summary>
public sealed partial class StackManifestTests
{
    /// <summary>The stacks this folder was written for; more may come.</summary>
    private static readonly string[] KnownStacks = ["aspnetcore", "aspnetcore-mvc"];

    [GeneratedRegex(@"^\s*const\s+string\s+DisplayName\s*=\s*""(?<value>[^""\\]*)""\s*;", RegexOptions.Multiline)]
    private static partial Regex DisplayNameConstant();

    [GeneratedRegex(@"^\s*const\s+int\s+DefaultPort\s*=\s*(?<value>[0-9]+)\s*;", RegexOptions.Multiline)]
    private static partial Regex DefaultPortConstant();

    public static TheoryData<string> Stacks()
    {
        var data = new TheoryData<string>();
        foreach (string name in CSharpStacks())
        {
            data.Add(name);
        }
        return data;
    }

    private static List<string> CSharpStacks() =>
        Directory.EnumerateDirectories(Repository.ServersDir)
            .Where(dir => !Path.GetFileName(dir).StartsWith('_'))
            .Where(dir => Directory.EnumerateFiles(dir, "*.csproj").Any())
            .Select(dir => Path.GetFileName(dir))
            .Order(StringComparer.Ordinal)
            .ToList();

    [Fact]
    public void TheCSharpStacksAreFound()
    {
        List<string> found = CSharpStacks();
        foreach (string name in KnownStacks)
        {
            Assert.Contains(name, found);
        }
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public void DisplayNameMatchesManifest(string stack)
    {
        string folder = Path.Combine(Repository.ServersDir, stack);
        string manifest = TomlTopLevel.String(Path.Combine(folder, "server.toml"), "display_name");
        Assert.Equal(manifest, SingleConstant(folder, DisplayNameConstant(), "const string DisplayName = \"...\";"));
        // What the server will send: the contract builds the hello prefix from it.
        var routes = new Routes(manifest, Repository.Calendar);
        Assert.StartsWith($"Hello World, from {manifest}! ", routes.Hello().Text, StringComparison.Ordinal);
    }

    [Theory]
    [MemberData(nameof(Stacks))]
    public void DefaultPortMatchesManifest(string stack)
    {
        string folder = Path.Combine(Repository.ServersDir, stack);
        long manifest = TomlTopLevel.Integer(Path.Combine(folder, "server.toml"), "port");
        string constant = SingleConstant(folder, DefaultPortConstant(), "const int DefaultPort = ...;");
        Assert.Equal(manifest, long.Parse(constant, CultureInfo.InvariantCulture));
    }

    private static string SingleConstant(string folder, Regex pattern, string convention)
    {
        string program = Path.Combine(folder, "Program.cs");
        Assert.True(File.Exists(program), $"{program} is missing");
        MatchCollection matches = pattern.Matches(File.ReadAllText(program));
        Assert.True(matches.Count == 1, $"{program} must declare `{convention}` exactly once (found {matches.Count})");
        return matches[0].Groups["value"].Value;
    }
}

/// <summary>
/// Reads one top-level key of a TOML file: strict and small, enough for the
/// manifest's plain keys. A key before the first table header, a single-line basic
/// string without escapes, a literal string or a decimal integer, and an optional
/// comment; anything else, or the key given twice, fails loudly instead of guessing.
/// </summary>
internal static partial class TomlTopLevel
{
    [GeneratedRegex(@"^(?<key>[A-Za-z0-9_-]+)[ \t]*=[ \t]*(?<value>.*)$")]
    private static partial Regex KeyValue();

    [GeneratedRegex(@"^(?:""(?<text>[^""\\]*)""|'(?<text>[^']*)'|(?<int>[+-]?[0-9](?:_?[0-9])*))[ \t]*(?:#.*)?$")]
    private static partial Regex Scalar();

    public static string String(string path, string key)
    {
        Match value = Value(path, key);
        Assert.True(value.Groups["text"].Success, $"{path}: '{key}' must be a single-line string");
        return value.Groups["text"].Value;
    }

    public static long Integer(string path, string key)
    {
        Match value = Value(path, key);
        Assert.True(value.Groups["int"].Success, $"{path}: '{key}' must be an integer");
        return long.Parse(value.Groups["int"].Value.Replace("_", "", StringComparison.Ordinal), CultureInfo.InvariantCulture);
    }

    private static Match Value(string path, string key)
    {
        Match? found = null;
        foreach (string raw in File.ReadLines(path))
        {
            string line = raw.Trim();
            if (line.StartsWith('['))
            {
                break; // the first table: top-level keys end here
            }
            if (line.Length == 0 || line.StartsWith('#'))
            {
                continue;
            }
            Match pair = KeyValue().Match(line);
            if (!pair.Success || pair.Groups["key"].Value != key)
            {
                continue;
            }
            Assert.True(found is null, $"{path}: '{key}' is given twice");
            found = Scalar().Match(pair.Groups["value"].Value);
            Assert.True(found.Success, $"{path}: the value of '{key}' is not a plain string or integer: {pair.Groups["value"].Value}");
        }
        Assert.True(found is not null, $"{path}: no top-level '{key}'");
        return found;
    }
}
